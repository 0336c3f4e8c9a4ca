// How the CLI shows things to a person: one line per event of a run, and one
// line per pending approval, question or unsettled mutation row. Pure
// functions of the wire types; the --json forms print the objects as they
// came. Texts are JSON-quoted so that a line is always one line.
import type {
  ApprovalListItem,
  AuditEntry,
  EngineEvent,
  Halt,
  InputListItem,
  MutationOutcome,
  PolicyChange,
  RunSummary,
  McpServerListItem,
  TokenListItem,
} from "approved-execution-engine/client";

const TYPE_COLUMN_CHARS = 23;
const SEQUENCE_COLUMN_CHARS = 5;

const quote = (text: string) => JSON.stringify(text);
const compact = (value: unknown) => JSON.stringify(value);
/** Contract section 19: every value withheld from an approval's arguments, as `hidden=["/path (N chars)",...]` (JSON, so one token). */
const hiddenPart = (hidden: readonly { path: string; chars: number }[] | undefined) =>
  hidden === undefined || hidden.length === 0 ? [] : [`hidden=${compact(hidden.map((h) => `${h.path} (${h.chars} chars)`))}`];

/** What a reminder or an escalation is about: `approval=…`, or `input=…` for an MCP question (contract section 24). */
const waitingOn = (event: { approval_id?: string; input_id?: string }) => [
  ...(event.approval_id === undefined ? [] : [`approval=${event.approval_id}`]),
  ...(event.input_id === undefined ? [] : [`input=${event.input_id}`]),
];

/** `#12   10:00:01.250Z tool_execution          <details>`: sequence, UTC time, type, what the event says. */
export function eventLine(event: EngineEvent): string {
  const time = event.at.length >= 24 ? event.at.slice(11, 24) : event.at;
  const head = `${`#${event.sequence}`.padEnd(SEQUENCE_COLUMN_CHARS)} ${time} ${event.type.padEnd(TYPE_COLUMN_CHARS)}`;
  const details = eventDetails(event);
  return details === "" ? head.trimEnd() : `${head} ${details}`;
}

function eventDetails(event: EngineEvent): string {
  switch (event.type) {
    case "run_started":
      return [
        `user=${event.user_id}`,
        ...(event.requested_by === undefined || event.requested_by === event.user_id ? [] : [`requested_by=${event.requested_by}`]),
      ].join(" ");
    case "assistant_message":
      return quote(event.text);
    case "tool_started":
      return `${event.tool_name} call=${event.tool_call_id} approval_required=${event.approval_required}`;
    case "approval_requested":
      return [
        event.tool_name,
        `call=${event.tool_call_id}`,
        `approval=${event.approval_id}`,
        `level=${event.level}`,
        `expires=${event.expires_at}`,
        ...(event.required === undefined || event.required === 1 ? [] : [`required=${event.required}`]),
        ...(event.approvers === undefined || event.approvers === null ? [] : [`approvers=${event.approvers.join(",")}`]),
        `args=${compact(event.arguments)}`,
        ...hiddenPart(event.hidden),
      ].join(" ");
    case "approval_vote":
      return [
        event.tool_name,
        `call=${event.tool_call_id}`,
        `approval=${event.approval_id}`,
        `vote=${event.votes}/${event.required}`,
        `by=${event.decided_by}`,
      ].join(" ");
    case "approval_resolved":
      return [
        event.tool_name,
        `call=${event.tool_call_id}`,
        `approval=${event.approval_id}`,
        `decision=${event.decision}`,
        ...(event.decided_by === undefined ? [] : [`by=${event.decided_by}`]),
        ...(event.reason === undefined ? [] : [`reason=${quote(event.reason)}`]),
      ].join(" ");
    // Contract section 24: an approval (or, by input_id, its call's MCP question) reminded or escalated.
    case "approval_reminded":
      return [event.tool_name, `call=${event.tool_call_id}`, ...waitingOn(event), `expires=${event.expires_at}`].join(" ");
    case "approval_escalated":
      return [
        event.tool_name,
        `call=${event.tool_call_id}`,
        ...waitingOn(event),
        `approvers=${event.approvers === null ? "default" : event.approvers.join(",")}`,
        `escalated_to=${event.escalated_to.join(",")}`,
      ].join(" ");
    case "tool_execution_started":
      return `${event.tool_name} call=${event.tool_call_id} approval=${event.approval_id}`;
    case "human_input_requested":
      // An MCP tool's question mid-call (contract section 21) shows its input_id and its form's schema.
      return [
        `call=${event.tool_call_id}`,
        ...(event.input_id === undefined ? [] : [`input=${event.input_id}`]),
        `question=${quote(event.question)}`,
        ...(event.requested_schema === undefined ? [] : [`schema=${JSON.stringify(event.requested_schema)}`]),
        `expires=${event.expires_at}`,
      ].join(" ");
    case "human_input_received":
      return [
        `call=${event.tool_call_id}`,
        ...(event.input_id === undefined ? [] : [`input=${event.input_id}`, `action=${event.action ?? "?"}`]),
        `by=${event.answered_by}`,
      ].join(" ");
    case "tool_execution":
      return [
        event.tool_name,
        `call=${event.tool_call_id}`,
        event.execution_status,
        ...(event.reason === undefined ? [] : [`reason=${event.reason}`]),
        // Contract section 23: the tool's digest now listed, or that it is gone.
        ...(event.tool_digest === undefined ? [] : [`tool_digest=${event.tool_digest ?? "gone"}`]),
        ...(event.error === undefined ? [] : [`error=${event.error.code}`]),
        ...(event.result === undefined ? [] : [`result=${event.result.is_error ? "tool_error" : "ok"},${event.result.content_bytes}B`]),
        ...(event.mutation_id === undefined ? [] : [`mutation=${event.mutation_id}`]),
      ].join(" ");
    case "tool_completed":
      return `${event.tool_name} call=${event.tool_call_id} approved=${event.approved} ${event.duration_ms}ms`;
    case "heartbeat":
      return "";
    case "run_completed":
      return [`tool_calls=${event.tool_calls}`, ...(event.text === undefined ? [] : [quote(event.text)])].join(" ");
    case "run_failed":
      return `error=${event.error.code} ${quote(event.error.message)}`;
    default: {
      const unknown: never = event;
      return compact(unknown);
    }
  }
}

export function approvalLine(a: ApprovalListItem): string {
  return [
    `approval ${a.approval_id} run=${a.run_id} ${a.tool_name} call=${a.tool_call_id} level=${a.level} expires=${a.expires_at} args=${compact(a.arguments)}`,
    ...hiddenPart(a.hidden),
    ...(a.status === "pending" ? [] : [`status=${a.status}`]),
    ...(a.required === undefined || a.required === 1 ? [] : [`votes=${a.approvals?.length ?? 0}/${a.required}`]),
    ...(a.approvals === undefined || a.approvals.length === 0 ? [] : [`voters=${a.approvals.map((v) => v.by).join(",")}`]),
    ...(a.approvers === undefined || a.approvers === null ? [] : [`approvers=${a.approvers.join(",")}`]),
    ...(a.decided_by === undefined ? [] : [`by=${a.decided_by}`]),
    ...(a.reason === undefined ? [] : [`reason=${quote(a.reason)}`]),
  ].join(" ");
}

export function inputLine(i: InputListItem): string {
  // An MCP tool's question mid-call (contract section 21), as the summary's line shows it: its input_id, call and form.
  if (i.input_id !== undefined) {
    return `question ${i.input_id} run=${i.run_id} call=${i.tool_call_id} ${quote(i.question)} schema=${JSON.stringify(i.requested_schema ?? {})} expires=${i.expires_at}`;
  }
  return `question ${i.tool_call_id} run=${i.run_id} ${quote(i.question)} expires=${i.expires_at}`;
}

/**
 * The pending entries of one run's summary, each approval with what its
 * approval_requested said (`requested`, by approval id): level, arguments and
 * hidden paths, as `pending` across runs shows them.
 */
export function summaryPendingLines(
  summary: RunSummary,
  requested: ReadonlyMap<string, Extract<EngineEvent, { type: "approval_requested" }>> = new Map(),
): string[] {
  return [
    ...summary.pending_approvals.map((a) => {
      const asked = requested.get(a.approval_id);
      return [
        `approval ${a.approval_id} run=${summary.run_id} ${a.tool_name} call=${a.tool_call_id}`,
        ...(asked === undefined ? [] : [`level=${asked.level}`]),
        `expires=${a.expires_at}`,
        ...(asked === undefined ? [] : [`args=${compact(asked.arguments)}`, ...hiddenPart(asked.hidden)]),
        ...(asked?.required === undefined || asked.required === 1 ? [] : [`required=${asked.required}`]),
      ].join(" ");
    }),
    ...summary.pending_inputs.map((i) =>
      i.input_id === undefined
        ? `question ${i.tool_call_id} run=${summary.run_id} ${quote(i.question)} expires=${i.expires_at}`
        : // An MCP tool's question mid-call (contract section 21): answered at its input_id with --accept/--decline/--cancel.
          `question ${i.input_id} run=${summary.run_id} call=${i.tool_call_id} ${quote(i.question)} schema=${JSON.stringify(i.requested_schema ?? {})} expires=${i.expires_at}`,
    ),
  ];
}

export function mutationLine(m: MutationOutcome): string {
  return [
    m.mutation_id,
    `state=${m.state}`,
    `run=${m.run_id}`,
    m.tool_name,
    `call=${m.tool_call_id}`,
    ...(m.error === undefined ? [] : [`error=${m.error.code}`]),
    ...(typeof m.approved_by === "string" ? [`approved_by=${m.approved_by}`] : []),
    `created=${m.created_at}`,
    ...(m.reconciliation === undefined
      ? []
      : [`reconciled=${m.reconciliation.outcome}`, `by=${m.reconciliation.reconciled_by}`, `evidence=${quote(m.reconciliation.evidence)}`]),
  ].join(" ");
}

/** `ci roles=requester owner=- expires=… last_used=… [revoked=…]`: one named token, never its value. */
export function tokenLine(t: TokenListItem): string {
  return [
    t.name,
    `roles=${t.roles.join(",")}`,
    `owner=${t.owner ?? "-"}`,
    `expires=${t.expires_at}`,
    `last_used=${t.last_used_at ?? "never"}`,
    ...(t.revoked_at === null ? [] : [`revoked=${t.revoked_at}`]),
  ].join(" ");
}

/** `<server> <url> protocol=<version|-> tools=<n|-> connected=<yes|no|-> last_contact=<at|never>[ trusted]`: one MCP server. */
export function mcpServerLine(s: McpServerListItem): string {
  const connected = s.connected === null ? "-" : s.connected ? "yes" : "no";
  return [
    s.server,
    s.url,
    `protocol=${s.protocol_version ?? "-"}`,
    `auth=${s.auth}`,
    `tools=${s.tools ?? "-"}`,
    `connected=${connected}`,
    `last_contact=${s.last_contact_at ?? "never"}`,
    ...(s.trust_annotations ? ["trust_annotations"] : []),
    ...(s.connected_by !== undefined ? [`connected_by=${s.connected_by}`] : []),
  ].join(" ");
}

/** `v<version> <status> <hash> by=<created_by> at=<created_at>[ base=<n>][ approved_by=…][ loosens=<n>] comment="…"`: one policy version. */
export function policyLine(v: PolicyChange): string {
  const parts = [`v${v.version}`, v.status, v.hash, `by=${v.created_by ?? "settings"}`];
  if (v.created_at !== null) parts.push(`at=${v.created_at}`);
  if (v.base_version !== undefined && v.base_version !== null) parts.push(`base=${v.base_version}`);
  if (v.approved_by !== undefined) parts.push(`approved_by=${v.approved_by}`);
  if (v.loosens.length > 0) parts.push(`loosens=${v.loosens.length}`);
  if (v.comment !== "") parts.push(`comment=${JSON.stringify(v.comment)}`);
  return parts.join(" ");
}

/** `<halt_id> <status> scope=<scope> by=<engaged_by> at=<engaged_at>[ releases=<n>/<required>][ released_by=…] reason="…"`: one halt. */
export function haltLine(h: Halt): string {
  return [
    h.halt_id,
    h.status,
    `scope=${h.scope}`,
    `by=${h.engaged_by}`,
    `at=${h.engaged_at}`,
    ...(h.releases !== undefined && h.required !== undefined && h.status === "active" ? [`releases=${h.releases}/${h.required}`] : []),
    ...(h.released_by !== undefined ? [`released_by=${h.released_by}`] : []),
    `reason=${quote(h.reason)}`,
  ].join(" ");
}

/** `<at> <action> by=<principal> target=<target> <result>[ xN] <details>`: one audit entry. */
export function auditLine(e: AuditEntry): string {
  return [
    e.at,
    e.action,
    `by=${e.principal}`,
    `target=${e.target}`,
    e.count !== undefined && e.count > 1 ? `${e.result}x${e.count}` : e.result,
    ...(e.details === undefined ? [] : [compact(e.details)]),
  ].join(" ");
}
