// The console's hash router: the page a URL fragment names, and the fragment
// of each page. Pure (no DOM), so it is unit-tested. Any fragment parses: a
// malformed percent-escape (`#/runs/%E0%A4%A`) is kept as typed instead of
// throwing URIError (contract section 20: the console renders for any
// fragment), and an unknown page is its own route, shown as such.
import { AUDIT_ACTIONS, type AuditAction } from "../../client/types";

/** The runs list's filters; absent means any. */
export interface RunFilters {
  status?: RunFilterStatus;
  channel_id?: string;
  user_id?: string;
}

/** The listing's statuses, and the ones the console tells apart: waiting on a person, cancelled. */
export const RUN_FILTER_STATUSES = ["waiting", "running", "completed", "failed", "cancelled"] as const;
export type RunFilterStatus = (typeof RUN_FILTER_STATUSES)[number];

function filtersOf(query: string): RunFilters {
  // URLSearchParams never throws on a malformed escape (it becomes U+FFFD).
  const params = new URLSearchParams(query);
  const status = params.get("status");
  const channel = params.get("channel_id")?.trim();
  const user = params.get("user_id")?.trim();
  return {
    ...(RUN_FILTER_STATUSES.some((s) => s === status) ? { status: status as RunFilterStatus } : {}),
    ...(channel ? { channel_id: channel } : {}),
    ...(user ? { user_id: user } : {}),
  };
}

/** The audit log's filters (the ones GET /api/audit takes); absent means any. */
export interface AuditFilters {
  principal?: string;
  action?: AuditAction;
}

function auditFiltersOf(query: string): AuditFilters {
  const params = new URLSearchParams(query);
  const principal = params.get("principal")?.trim();
  const action = params.get("action");
  return {
    ...(principal ? { principal } : {}),
    ...(AUDIT_ACTIONS.some((a) => a === action) ? { action: action as AuditAction } : {}),
  };
}

/** A fragment's query from filters, leaving out the empty ones. */
function withQuery(path: string, filters: object): string {
  const params = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => typeof e[1] === "string" && e[1] !== ""));
  const query = params.toString();
  return query === "" ? path : `${path}?${query}`;
}

export type Route =
  /** The landing page: what waits for a person (approvals, questions, outcomes to reconcile). */
  | { page: "waiting" }
  /** `filters`: the runs list's filters from the fragment's query (`#/runs?status=waiting&channel_id=C1`). */
  | { page: "runs"; filters: RunFilters }
  /** `approvalId`: the approval a link from Slack points at (`#/runs/<run>/approvals/<approval>`), shown in focus. */
  | { page: "run"; runId: string; approvalId?: string }
  | { page: "approvals" }
  | { page: "questions" }
  | { page: "outcomes" }
  | { page: "pool" }
  /** `filters`: the audit log's filters from the fragment's query (`#/audit?action=run.trigger`); admins only. */
  | { page: "audit"; filters: AuditFilters }
  /** The policy's versions, a diff, what is proposed, the shadow's differences and replay (contract section 24). */
  | { page: "policy" }
  | { page: "unknown"; fragment: string };

/** decodeURIComponent that never throws: a malformed escape stays as it was typed. */
function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function parseRoute(hash: string): Route {
  const [path = "", query = ""] = hash.replace(/^#\/?/, "").split(/\?(.*)/s);
  const [first = "", second, ...rest] = path.split("/");
  const simple = rest.length === 0 && second === undefined;
  switch (first) {
    case "":
      return { page: "waiting" };
    case "runs":
      if (simple || second === "") return { page: "runs", filters: filtersOf(query) };
      if (rest.length === 0 && second !== undefined) return { page: "run", runId: safeDecode(second) };
      if (rest.length === 2 && rest[0] === "approvals" && second && rest[1])
        return { page: "run", runId: safeDecode(second), approvalId: safeDecode(rest[1]) };
      break;
    case "audit":
      if (simple) return { page: "audit", filters: auditFiltersOf(query) };
      break;
    case "approvals":
    case "questions":
    case "outcomes":
    case "pool":
    case "policy":
      if (simple) return { page: first };
      break;
  }
  return { page: "unknown", fragment: safeDecode(path) };
}

export const href = {
  waiting: "#/",
  runs: "#/runs",
  /** The runs list with these filters. */
  runsWith: (filters: RunFilters) => withQuery("#/runs", filters),
  run: (runId: string) => `#/runs/${encodeURIComponent(runId)}`,
  /** One approval on its run's page (the link approval messages in Slack carry, src/slack/event-posts.ts). */
  approval: (runId: string, approvalId: string) => `#/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(approvalId)}`,
  approvals: "#/approvals",
  questions: "#/questions",
  outcomes: "#/outcomes",
  pool: "#/pool",
  audit: "#/audit",
  policy: "#/policy",
  /** The audit log with these filters. */
  auditWith: (filters: AuditFilters) => withQuery("#/audit", filters),
} as const;
