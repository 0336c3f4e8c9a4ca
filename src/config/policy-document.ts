// The policy document of contract section 24: `{"tools": <TOOL_POLICY>,
// "groups": <APPROVER_GROUPS>, "budget": <MUTATION_BUDGET>}`, validated
// exactly like those three settings (the same zod schemas and the same
// cross-checks of src/config/config.ts, so a bad document gets the very
// `details` a bad setting gives, paths named after the settings), and its
// `hash`: `sha256:` of its RFC 8785 form. Version 0 is the deployment's
// settings as one document.
import { z } from "zod";
import { canonicalJson } from "../client/audit-chain";
import {
  approverGroupsSchema,
  type HostConfig,
  limitsOutlivingRetention,
  mutationBudgetSchema,
  nudgesNotBeforeTimeout,
  toolPolicySchema,
  unknownGroupReferences,
} from "./config";

/** One policy document, as validated (every member present). */
export interface PolicyDocument {
  tools: HostConfig["TOOL_POLICY"];
  groups: HostConfig["APPROVER_GROUPS"];
  budget: HostConfig["MUTATION_BUDGET"];
}

/** The document's three members and the setting each stands for (details name the setting, as a bad setting's do). */
const MEMBERS = { tools: "TOOL_POLICY", groups: "APPROVER_GROUPS", budget: "MUTATION_BUDGET" } as const;

const documentSchema = z
  .object({
    TOOL_POLICY: toolPolicySchema.default({}),
    APPROVER_GROUPS: approverGroupsSchema.default({}),
    MUTATION_BUDGET: mutationBudgetSchema.default({}),
  })
  .strict();

export type PolicyIssue = { path: string; message: string };
export type PolicyParse = { ok: true; document: PolicyDocument } | { ok: false; details: PolicyIssue[] };

/**
 * Validates a document as the settings are validated (contract section 24): `retentionDays` is
 * MUTATION_RETENTION_DAYS, which every limit's `per` must fit in, `approvalTimeoutMs` APPROVAL_TIMEOUT_MS, which
 * every `remind_before` and `escalate_after` must be shorter than. Unknown members are refused.
 */
export function parsePolicyDocument(value: unknown, retentionDays: number | undefined, approvalTimeoutMs: number): PolicyParse {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, details: [{ path: "policy", message: 'a JSON object {"tools","groups","budget"}' }] };
  }
  const unknown = Object.keys(value).filter((k) => !Object.hasOwn(MEMBERS, k));
  if (unknown.length > 0) {
    return {
      ok: false,
      details: unknown.map((k) => ({ path: `policy.${k}`, message: 'not a member of a policy ("tools", "groups", "budget")' })),
    };
  }
  const doc = value as Record<string, unknown>;
  const parsed = documentSchema.safeParse({ TOOL_POLICY: doc.tools, APPROVER_GROUPS: doc.groups, MUTATION_BUDGET: doc.budget });
  if (!parsed.success) return { ok: false, details: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) };
  const settings = parsed.data;
  const details = [
    ...unknownGroupReferences(settings),
    ...limitsOutlivingRetention({ TOOL_POLICY: settings.TOOL_POLICY, MUTATION_RETENTION_DAYS: retentionDays }),
    ...nudgesNotBeforeTimeout(settings.TOOL_POLICY, approvalTimeoutMs),
  ];
  if (details.length > 0) return { ok: false, details };
  return { ok: true, document: { tools: settings.TOOL_POLICY, groups: settings.APPROVER_GROUPS, budget: settings.MUTATION_BUDGET } };
}

/** Version 0: the deployment's settings as one document. */
export function settingsDocument(config: Pick<HostConfig, "TOOL_POLICY" | "APPROVER_GROUPS" | "MUTATION_BUDGET">): PolicyDocument {
  return { tools: config.TOOL_POLICY, groups: config.APPROVER_GROUPS, budget: config.MUTATION_BUDGET };
}

/** `sha256:` and the lower-case hex SHA-256 of the document's RFC 8785 form (contract section 24). */
export async function policyHash(document: PolicyDocument): Promise<string> {
  const bytes = new TextEncoder().encode(canonicalJson(document));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `sha256:${[...digest].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
