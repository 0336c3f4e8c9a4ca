// The policy as one JSON document (contract section 24): `{"tools":
// <TOOL_POLICY>, "groups": <APPROVER_GROUPS>, "budget": <MUTATION_BUDGET>}`,
// validated exactly like those settings: the same zod schemas, the same
// cross-checks (a `group:` that names no group, a limit whose window outlives
// MUTATION_RETENTION_DAYS), and the same `details` ({path, message}), with
// paths into the document (`tools.<tool>.level`) instead of setting names.
// The deployment's settings are the document of version 0.
import { z } from "zod";
import {
  approverGroupsSchema,
  type HostConfig,
  limitsOutlivingRetention,
  mutationBudgetSchema,
  toolPolicySchema,
  unknownGroupReferences,
} from "./config";

const policyDocumentSchema = z
  .object({ tools: toolPolicySchema, groups: approverGroupsSchema, budget: mutationBudgetSchema })
  .strict()
  .meta({ id: "PolicyDocument", description: "TOOL_POLICY, APPROVER_GROUPS and MUTATION_BUDGET as one document (contract section 24)" });

export type PolicyDocument = z.output<typeof policyDocumentSchema>;

/** One problem of a document, as a bad setting's `details` name them. */
export interface PolicyProblem {
  path: string;
  message: string;
}

const SETTING_OF_PATH: Readonly<Record<string, string>> = { TOOL_POLICY: "tools", APPROVER_GROUPS: "groups", MUTATION_BUDGET: "budget" };

/** A settings path (`TOOL_POLICY.x.approvers.0`) as a path into the document (`tools.x.approvers.0`). */
function documentPath(path: string): string {
  const dot = path.indexOf(".");
  const head = dot < 0 ? path : path.slice(0, dot);
  const mapped = SETTING_OF_PATH[head];
  return mapped === undefined ? path : `${mapped}${dot < 0 ? "" : path.slice(dot)}`;
}

/**
 * The document, or every problem with it: the schemas' issues first, then the
 * cross-checks the settings get (unknown groups, limits outliving
 * MUTATION_RETENTION_DAYS in force).
 */
export function validatePolicyDocument(
  value: unknown,
  config: Pick<HostConfig, "MUTATION_RETENTION_DAYS">,
): { ok: true; policy: PolicyDocument } | { ok: false; details: PolicyProblem[] } {
  const parsed = policyDocumentSchema.safeParse(value);
  if (!parsed.success) return { ok: false, details: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) };
  const policy = parsed.data;
  const settings = {
    TOOL_POLICY: policy.tools,
    APPROVER_GROUPS: policy.groups,
    MUTATION_RETENTION_DAYS: config.MUTATION_RETENTION_DAYS,
  };
  const problems = [...unknownGroupReferences(settings), ...limitsOutlivingRetention(settings)].map((p) => ({
    path: documentPath(p.path),
    message: p.message,
  }));
  return problems.length > 0 ? { ok: false, details: problems } : { ok: true, policy };
}
