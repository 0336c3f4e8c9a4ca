// Wire types of the engine's API as a consumer sees them (contract sections
// 3-9). Declared here rather than imported from the server's modules so the
// client stays a self-contained, platform-neutral entry point.

// ---- trigger, receipt, summary (section 3) ----------------------------------

export interface ScriptedToolCall {
  tool_name: string;
  arguments?: Record<string, unknown>;
  tool_call_id?: string;
}

export interface ScriptTurn {
  text?: string;
  tool_calls?: ScriptedToolCall[];
  delay_ms?: number;
}

export interface TriggerRequest {
  message: string;
  channel_id?: string;
  user_id?: string;
  delivery_id?: string;
  max_tool_calls?: number;
  script?: ScriptTurn[];
}

export interface TriggerReceipt {
  /** `accepted` (202) for a new run, `duplicate` (200) for a delivery identity seen before. */
  status: "accepted" | "duplicate";
  run_id: string;
  channel_id: string;
  events_url: string;
  delivery_id?: string;
}

export interface DeliveryReceipt {
  delivery_id: string;
  run_id: string;
  channel_id: string;
  accepted_at: string;
}

export type RunStatus = "running" | "completed" | "failed";

/**
 * GET /runs/{run_id}. The engine declares it once with zod (src/wire/run-summary.ts); this package
 * cannot import zod, so this plain copy is held equal to it by test/unit/run-summary-type.test.ts.
 */
export interface RunSummary {
  run_id: string;
  channel_id: string;
  status: RunStatus;
  last_sequence: number;
  /** Lowest sequence still retained; last_sequence + 1 once retention dropped every event. */
  earliest_sequence: number;
  subscribers: number;
  /** The watchers by kind (contract section 27); `subscribers` is their sum. */
  watchers: { sse: number; websocket: number };
  pending_approvals: { approval_id: string; tool_call_id: string; tool_name: string; expires_at: string }[];
  /** `input_id` and `requested_schema`: an MCP tool's question mid-call (contract section 21). */
  pending_inputs: {
    tool_call_id: string;
    question: string;
    expires_at: string;
    input_id?: string;
    /** A form's requestedSchema (a flat JSON Schema object), its values typed one level deep. */
    requested_schema?: Record<string, object | string | number | boolean | null>;
  }[];
  created_at: string;
  ended_at?: string;
  /** The run's user: its requester, or the person an adapter triggered it for. */
  user_id?: string;
  /** The run's message, secret-looking values redacted, cut to its first 200 characters (absent from older servers). */
  request?: string;
  /** The principal that triggered the run (contract section 18). */
  requested_by?: string;
  /** The person an adapter triggered the run for. */
  on_behalf_of?: string;
  /** While the Slack app is on: posts waiting in the run's outbox, and posts given up (contract section 14). */
  slack_posts_pending?: number;
  slack_posts_failed?: number;
}

// ---- events (section 4) -----------------------------------------------------

interface Envelope<T extends string> {
  protocol_version: "v2";
  sequence: number;
  run_id: string;
  channel_id: string;
  type: T;
  at: string;
}

export interface ExecutionResult {
  is_error: boolean;
  content_bytes: number;
  /** A text summary of the tool's answer (at most 2 KiB); absent when the answer had no text. */
  summary?: string;
}

export interface ErrorFacts {
  code: string;
  message: string;
}

/** `error.code` of an executed call (contract section 4). */
export type ExecutedErrorCode =
  | "transport_timeout"
  | "transport_error"
  | "tool_error"
  | "response_too_large"
  | "settlement_timeout"
  | "input_unsupported";

export type NotExecutedReason =
  | "denied"
  | "expired"
  | "cancelled"
  | "call_ceiling"
  | "not_in_budget"
  | "budget_exhausted"
  | "storage_unavailable"
  | "replay_blocked"
  | "prior_outcome_unknown"
  | "transport_unavailable"
  | "authorization_required"
  | "tool_changed"
  /** Contract section 23: a halt covers the call (`halt_id`), or a mutation limit is full (`retry_after_s`). */
  | "halted"
  | "rate_limited";

/** An MCP tool's annotations as its server gave them (contract section 21). A `destructiveHint: true` is shown as "Destructive". */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A value withheld from an approval's arguments: an RFC 6901 JSON Pointer into them, and the length of its JSON text. */
export interface HiddenValue {
  path: string;
  reason: "secret";
  chars: number;
}

export type EngineEvent =
  | (Envelope<"run_started"> & { user_id: string; requested_by?: string; on_behalf_of?: string })
  | (Envelope<"assistant_message"> & { text: string })
  | (Envelope<"tool_started"> & { tool_name: string; tool_call_id: string; approval_required: boolean })
  | (Envelope<"approval_requested"> & {
      tool_name: string;
      tool_call_id: string;
      approval_id: string;
      level: "approve" | "confirm";
      description: string;
      /** The call's arguments (a JSON object), cut nowhere but where a secret was redacted. */
      arguments: unknown;
      /** Every value withheld from `arguments` (contract section 19); `[]` when nothing is. */
      hidden: HiddenValue[];
      expires_at: string;
      /** How many distinct persons must approve (contract section 19). */
      required: number;
      /** The approvers patterns in force, or null for the default rule (section 19). */
      approvers: string[] | null;
      /** The tool's MCP annotations as its server gave them: claims, not facts (absent when it gave none, and from older servers). */
      annotations?: ToolAnnotations;
      /** The tool's identity as listed when the call was proposed (contract section 23), `sha256:<hex>`; absent when unlisted. */
      tool_digest?: string;
      /** The policy version active at this check and its hash (contract section 24; absent from older servers). */
      policy_version?: number;
      policy_hash?: string;
    })
  | (Envelope<"approval_vote"> & {
      tool_name: string;
      tool_call_id: string;
      approval_id: string;
      decided_by: string;
      votes: number;
      required: number;
      /** The policy version active at this check and its hash (contract section 24; absent from older servers). */
      policy_version?: number;
      policy_hash?: string;
    })
  | (Envelope<"approval_resolved"> & {
      tool_name: string;
      tool_call_id: string;
      approval_id: string;
      decision: "approved" | "denied" | "expired" | "cancelled";
      decided_by?: string;
      /** The decider's reason, redacted. */
      reason?: string;
      /** Every counted approve, in order (section 19; absent from older servers). */
      approvals?: ApprovalVote[];
      /** The policy version active at this check and its hash (contract section 24; absent from older servers). */
      policy_version?: number;
      policy_hash?: string;
    })
  /** Contract section 24: a pending approval (or, with `input_id`, its call's MCP question) reminded before it expires. */
  | (Envelope<"approval_reminded"> & {
      tool_name: string;
      tool_call_id: string;
      approval_id?: string;
      input_id?: string;
      expires_at: string;
      /** The policy version active when it fired and its hash (contract section 24). */
      policy_version?: number;
      policy_hash?: string;
    })
  /** Contract section 24: escalated after `escalate_after`: `escalated_to` may now decide beside the rule in force. */
  | (Envelope<"approval_escalated"> & {
      tool_name: string;
      tool_call_id: string;
      approval_id?: string;
      input_id?: string;
      /** The approvers patterns in force, or null for the default rule (section 19). */
      approvers: string[] | null;
      escalated_to: string[];
      /** The policy version active when it fired and its hash (contract section 24). */
      policy_version?: number;
      policy_hash?: string;
    })
  | (Envelope<"tool_execution_started"> & { tool_name: string; tool_call_id: string; approval_id: string })
  | (Envelope<"human_input_requested"> & {
      tool_call_id: string;
      question: string;
      expires_at: string;
      /** An MCP tool's question mid-call (contract section 21): `<tool_call_id>:<round>:<key>`; absent for human__ask. */
      input_id?: string;
      /** The form's flat JSON Schema, as the MCP server gave it (contract section 21). */
      requested_schema?: Record<string, unknown>;
    })
  | (Envelope<"human_input_received"> & {
      tool_call_id: string;
      answered_by: string;
      input_id?: string;
      action?: "accept" | "decline" | "cancel";
    })
  | (Envelope<"tool_execution"> & {
      tool_name: string;
      tool_call_id: string;
      approval_id?: string;
      execution_status: "executed" | "not_executed";
      reason?: NotExecutedReason;
      result?: ExecutionResult;
      error?: { code: ExecutedErrorCode; message: string };
      mutation_id?: string;
      /** With not_executed(tool_changed) (contract section 23): the tool's digest now listed, null when it is gone. */
      tool_digest?: string | null;
      /** With `rate_limited` (contract section 23): a hint of when the limit has room again. */
      retry_after_s?: number;
      /** With `halted` (contract section 23): the oldest halt covering the call. */
      halt_id?: string;
      /** The policy version active at this check and its hash (contract section 24; absent from older servers). */
      policy_version?: number;
      policy_hash?: string;
    })
  | (Envelope<"tool_completed"> & { tool_name: string; tool_call_id: string; approval_id?: string; approved: boolean; duration_ms: number })
  | Envelope<"heartbeat">
  | (Envelope<"run_completed"> & { text?: string; tool_calls: number })
  | (Envelope<"run_failed"> & { error: ErrorFacts });

export type EngineEventType = EngineEvent["type"];

/** One counted approve (contract section 19). */
export interface ApprovalVote {
  by: string;
  at: string;
}

export const TERMINAL_EVENT_TYPES: readonly EngineEventType[] = ["run_completed", "run_failed"];

// ---- decisions (section 6) --------------------------------------------------

/** The engine records the request's principal as `decided_by` (contract section 18): the client sends none. */
export interface ApprovalDecision {
  decision: "approve" | "deny";
  reason?: string;
  confirmation?: string;
}

/** `pending`: an approve was counted, `votes` of `required` distinct persons so far (contract section 19). */
export type ApprovalAnswer =
  | { approval_id: string; decision: "approved" | "denied"; status: "resolved" }
  | { approval_id: string; decision: "approved"; status: "pending"; votes: number; required: number };

/**
 * The engine records the request's principal as `answered_by`. `{answer}` answers `human__ask`
 * (at its tool_call_id); `{action, content?}` answers an MCP tool's question (at its input_id,
 * contract section 21), `content` validated against the question's `requested_schema`.
 */
export type InputAnswer = { answer: string } | { action: "accept"; content: Record<string, unknown> } | { action: "decline" | "cancel" };

export type InputAnswerResult =
  | { tool_call_id: string; status: "answered" }
  | { input_id: string; tool_call_id: string; action: "accept" | "decline" | "cancel"; status: "answered" };

export interface CancelAnswer {
  /** `cancelling` (202), or the run's terminal status (200) when it had already ended. */
  status: "cancelling" | RunStatus;
}

// ---- durable outcomes and the pool (sections 8, 9) --------------------------

export type MutationState = "unresolved" | "not_executed" | "completed" | "outcome_unknown";

export interface MutationOutcome {
  schema: "mutation_outcome/v1";
  mutation_id: string;
  run_id: string;
  channel_id: string;
  delivery_id: string | null;
  tool_call_id: string;
  approval_id: string | null;
  tool_name: string;
  arguments_digest: string;
  /** The decision's `decided_by`, or "automatic" (contract section 8); null on rows written before the engine recorded it. */
  approved_by: string | null;
  approved_at: string | null;
  /** Every counted approve, in order ([] for an automatic approval; absent on rows written before contract section 19). */
  approvals?: ApprovalVote[];
  state: MutationState;
  dispatched: boolean;
  /** How many tools/call requests carried this mutation (contract section 21: more than 1 after questions mid-call); absent before it was settled by a send. */
  sends?: number;
  reason?: string;
  result?: ExecutionResult;
  error?: ErrorFacts;
  created_at: string;
  settled_at?: string;
  reconciliation?: { outcome: "completed" | "not_executed"; reconciled_by: string; evidence: string; at: string };
  /** The tool's digest its approval was bound to (contract section 23); absent on older rows and for an unlisted tool. */
  tool_digest?: string;
  /** Contract section 23: D1's clock when the checkpoint committed, and who the row counts for. */
  dispatched_at?: string;
  server?: string;
  requested_by?: string;
  on_behalf_of?: string;
  requester_person?: string;
  /** Contract section 24: the policy version that decided the call, and its hash. */
  policy_version?: number;
  policy_hash?: string;
}

export interface RunMutations {
  run_id: string;
  mutations: MutationOutcome[];
}

/** The engine records the request's principal as `reconciled_by`. */
export interface ReconcileRequest {
  outcome: "completed" | "not_executed";
  evidence: string;
}

export interface StoragePoolStats {
  capacity: number;
  in_use: number;
  waiting: number;
  acquired_total: number;
  waited_total: number;
  rejected_total: number;
  reclaimed_total: number;
}

// ---- listings across runs (section 15) ----------------------------------------

export type RunSource = "api" | "slack";

export interface RunListItem {
  run_id: string;
  channel_id: string;
  user_id: string;
  /** The principal that triggered the run (contract section 18); absent on runs indexed before principals. */
  requested_by?: string;
  on_behalf_of?: string;
  delivery_id: string | null;
  source: RunSource;
  status: RunStatus;
  created_at: string;
  ended_at?: string;
  /** The run's message, secret-looking values redacted, cut to its first 200 characters (absent on runs indexed before it was kept). */
  request?: string;
  /** A failed run's run_failed `error.code`: `cancelled` for a cancelled run. */
  error_code?: string;
}

export type ApprovalStatus = "pending" | "approved" | "denied" | "expired" | "cancelled";

export interface ApprovalListItem extends AskedBy {
  approval_id: string;
  run_id: string;
  channel_id: string;
  tool_call_id: string;
  tool_name: string;
  level: "approve" | "confirm";
  description: string;
  /** The call's arguments with secret-looking values redacted. */
  arguments: unknown;
  /** Contract section 19 (absent from older servers and on approvals indexed before it): every value withheld from `arguments`. */
  hidden?: HiddenValue[];
  requested_at: string;
  expires_at: string;
  status: ApprovalStatus;
  decided_by?: string;
  /** The decider's reason, redacted (absent when none was given, and from older servers). */
  reason?: string;
  /** Contract section 19 (absent from older servers): how many persons must approve, the approvers patterns (null: the default rule), the votes so far. */
  required?: number;
  approvers?: string[] | null;
  approvals?: ApprovalVote[];
  /** The tool's server gave it `destructiveHint: true` (contract section 21); absent otherwise, and from older servers. */
  destructive?: boolean;
}

/**
 * Who asked for an approval or a question and what for, from the runs index
 * (absent while the run is not indexed yet, and from older servers): as on
 * RunListItem.
 */
export interface AskedBy {
  user_id?: string;
  requested_by?: string;
  on_behalf_of?: string;
  /** The run's message, redacted, cut to its first 200 characters. */
  request?: string;
}

export type InputStatus = "pending" | "answered" | "expired" | "cancelled";

export interface InputListItem extends AskedBy {
  tool_call_id: string;
  run_id: string;
  channel_id: string;
  question: string;
  /** An MCP tool's question mid-call (contract section 21): its id, `<tool_call_id>:<round>:<key>`; absent for human__ask. */
  input_id?: string;
  /** An MCP question's form: the elicitation's requestedSchema as the server gave it. */
  requested_schema?: Record<string, unknown>;
  /** The tool that asks: `human__ask`, or the MCP tool asking mid-call (absent on questions indexed before it, and from older servers). */
  tool_name?: string;
  requested_at: string;
  expires_at: string;
  status: InputStatus;
}

/** What every listing query accepts: `limit` 1..200 (server default 50) and the previous page's `next_cursor`. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

export interface RunsQuery extends PageQuery {
  channel_id?: string;
  status?: RunStatus;
  /** Only runs this requester started. */
  user_id?: string;
}

export interface ApprovalsQuery extends PageQuery {
  status?: "pending" | "resolved";
}

export interface InputsQuery extends PageQuery {
  status?: "pending" | "answered";
}

export interface MutationsQuery extends PageQuery {
  state?: MutationState;
  channel_id?: string;
}

/** `next_cursor` is null on the last page. */
export interface RunsPage {
  runs: RunListItem[];
  next_cursor: string | null;
}

export interface ApprovalsPage {
  approvals: ApprovalListItem[];
  next_cursor: string | null;
}

export interface InputsPage {
  inputs: InputListItem[];
  next_cursor: string | null;
}

export interface MutationsPage {
  mutations: MutationOutcome[];
  next_cursor: string | null;
}

/** The four listings by name, for the page-walking helpers. */
export interface Listings {
  runs: { query: RunsQuery; page: RunsPage; item: RunListItem };
  approvals: { query: ApprovalsQuery; page: ApprovalsPage; item: ApprovalListItem };
  inputs: { query: InputsQuery; page: InputsPage; item: InputListItem };
  mutations: { query: MutationsQuery; page: MutationsPage; item: MutationOutcome };
}

export type ListingName = keyof Listings;

/** GET /api/openapi.json: an OpenAPI 3.1 document (only the fields a consumer usually reads are typed). */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; [extra: string]: unknown };
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, unknown>;
  [extra: string]: unknown;
}

// ---- principals: named tokens and the audit log (section 18) ------------------

export type Role = "viewer" | "requester" | "approver" | "reconciler" | "admin" | "adapter";

export interface TokenCreateRequest {
  /** `[a-z0-9][a-z0-9-]{0,62}`, not `root`; never reused. */
  name: string;
  roles: Role[];
  /** The person the token acts for: an `access:` or `slack:` principal id. */
  owner?: string;
  /** 1..3650, default 90. */
  ttl_days?: number;
}

export interface TokenCreated {
  name: string;
  /** The value (`aee_…`): shown only in this answer. */
  token: string;
  roles: Role[];
  owner: string | null;
  created_at: string;
  expires_at: string;
}

export interface TokenListItem {
  name: string;
  roles: Role[];
  owner: string | null;
  /** Created by its `access:` owner for themselves: the token is that person (contract section 19). */
  owned_by_creator: boolean;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** One server of MCP_SERVERS as last seen (GET /api/mcp/servers, contract section 21). */
export interface McpServerListItem {
  /** The name in MCP_SERVERS (tools are `mcp__<server>__<tool>`). */
  server: string;
  /** Origin and path; never a query, user info or header value. */
  url: string;
  /** The revision the last successful contact spoke (`2026-07-28`, or `2025-11-25` / `2025-06-18`); null before one. */
  protocol_version: string | null;
  auth: "none" | "headers" | "oauth";
  /** oauth: the grant's issuer, who connected it and when (contract section 21). */
  issuer?: string;
  connected_by?: string;
  connected_at?: string;
  trust_annotations: boolean;
  /** Whether the last contact succeeded; null before the first. */
  connected: boolean | null;
  /** Tools in the last listing; null before one. */
  tools: number | null;
  last_contact_at: string | null;
}

export interface McpServersListing {
  servers: McpServerListItem[];
}

export interface TokenRevoked {
  name: string;
  revoked_at: string;
}

/** POST /api/halts (contract section 23): `scope` is `all`, `server:<server>`, `tool:<tool_name>` or `principal:<principal id>`. */
export interface HaltRequest {
  scope: string;
  /** 1..500 characters (redacted). */
  reason: string;
  /** Only for `all` and `principal:`. */
  cancel_runs?: boolean;
}

/** A halt (contract section 23); the 201 of POST /api/halts is its first six fields. */
export interface Halt {
  halt_id: string;
  scope: string;
  reason: string;
  engaged_by: string;
  engaged_at: string;
  status: "active" | "released";
  releases?: number;
  required?: number;
  released_by?: string;
  released_at?: string;
  cancel?: { requested: number; done: number; finished_at?: string };
}

export interface HaltsPage {
  halts: Halt[];
  next_cursor: string | null;
}

/** POST /api/policy/replay (contract section 24): the candidate, the window (ISO 8601 UTC), and where the last page ended. */
export interface PolicyReplayRequest {
  policy: { tools: Record<string, unknown>; groups: Record<string, string[]>; budget: Record<string, number> };
  since: string;
  until?: string;
  /** Calls judged per page, 1..50 (default 50). */
  limit?: number;
  cursor?: string;
}

/** One check of a recorded call that the candidate decides otherwise. */
export interface PolicyReplayChange {
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  check: "ask" | "decider" | "quorum" | "checkpoint";
  recorded: string;
  candidate: string;
  principal?: string;
}

export interface PolicyReplayPage {
  examined: number;
  skipped: number;
  changed: PolicyReplayChange[];
  next_cursor: string | null;
}

/** DELETE /api/halts/{halt_id}: released (200), or the vote counted and more persons needed (202). */
export type HaltReleaseAnswer =
  | { halt_id: string; status: "released"; released_by: string; released_at: string }
  | { halt_id: string; status: "active"; releases: number; required: number };

/** A policy document (contract section 24): TOOL_POLICY, APPROVER_GROUPS and MUTATION_BUDGET as one JSON object. */
export interface PolicyDocument {
  tools: Record<string, Record<string, unknown>>;
  groups: Record<string, string[]>;
  budget: Record<string, number>;
}

export type PolicyStatus = "active" | "proposed" | "shadow" | "superseded" | "withdrawn" | "stale";

/** One loosening change: an RFC 6901 pointer into the document, the value before and after (null when absent). */
export interface PolicyLoosening {
  path: string;
  from: unknown;
  to: unknown;
}

/** PUT /api/policy's answer (201; 200 for a document identical to the active one), and approve's and withdraw's. */
export interface PolicyChange {
  version: number;
  hash: string;
  status: PolicyStatus;
  created_by: string | null;
  created_at: string | null;
  comment: string;
  loosens: PolicyLoosening[];
  base_version?: number | null;
  mode?: "enforce" | "shadow";
  approved_by?: string;
  approved_at?: string;
}

/** A version whole: GET /api/policy, the versions listing, one version. Version 0 is the deployment's settings. */
export interface PolicyVersion extends PolicyChange {
  policy: PolicyDocument;
}

export interface PolicyVersionsPage {
  versions: PolicyVersion[];
  next_cursor: string | null;
}

/** One check where the shadow version's verdict differed from the active one's (contract section 24). */
export interface PolicyShadowDifference {
  at: string;
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  check: "ask" | "decider" | "quorum" | "checkpoint";
  /** The active version's verdict (e.g. `eligible`, `approve`, `resolved`, `allowed`). */
  active: string;
  /** The shadow version's verdict (e.g. `not_an_approver`, `pending:1`, `rate_limited`). */
  shadow: string;
}

export interface PolicyShadowPage {
  differences: PolicyShadowDifference[];
  next_cursor: string | null;
}

export interface PolicyPutRequest {
  policy: PolicyDocument;
  /** The active version this change is based on (the first is 0). */
  base_version: number;
  /** Why, 0..1,000 characters (kept redacted). */
  comment?: string;
  mode?: "enforce" | "shadow";
}

/** Every action the audit log records (contract section 18), in the contract's order. */
export const AUDIT_ACTIONS = [
  "token.create",
  "token.revoke",
  "session.create",
  "session.end",
  "run.trigger",
  "run.cancel",
  "approval.decide",
  "input.answer",
  "mutation.reconcile",
  "access.refused",
  "audit.checkpoint",
  "audit.scrub",
  // Contract section 23.
  "halt.engage",
  "halt.release",
  // Contract section 24.
  "policy.put",
  "policy.approve",
  "policy.withdraw",
  "policy.replay",
  // Contract section 26.
  "slack.uninstall",
  "slack.refresh_failed",
  "webhook.disabled",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  id: string;
  at: string;
  principal: string;
  action: AuditAction;
  target: string;
  result: "ok" | "refused";
  /** Refusals coalesced per principal, action, target and minute. */
  count?: number;
  details?: Record<string, unknown>;
  /** Where it came from (contract section 25): `api`, `console`, `slack` or `engine`. */
  via?: "api" | "console" | "slack" | "engine";
  client_ip?: string;
  policy_version?: number;
  policy_hash?: string;
  /** Set once the sealer has chained the entry (contract section 25); absent while unsealed. */
  details_hash?: string;
  seq?: number;
  prev_hash?: string;
  hash?: string;
}

/** GET /api/audit/checkpoints (contract section 25). */
export interface AuditCheckpointPage {
  checkpoints: { seq: number; hash: string; at: string; kid: string; signature: string }[];
  next_cursor: string | null;
}

export interface AuditQuery {
  principal?: string;
  action?: AuditAction;
  limit?: number;
  cursor?: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  next_cursor: string | null;
  /** The sealed head: every entry up to this seq is chained (0 before the first). */
  sealed_through_seq: number;
}
