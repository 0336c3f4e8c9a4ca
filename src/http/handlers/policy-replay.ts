// POST /api/policy/replay (contract section 24, admin): a window of recorded
// calls judged by a candidate policy, one bounded page per request
// (src/listings/replay-reads.ts), audited `policy.replay`. Bad input is 400:
// a body not of this shape or times not ISO 8601 UTC (`invalid_request`),
// `since` after `until` (`invalid_request`), a candidate that fails the
// settings' validation (`invalid_policy` with the same `details`), a window
// starting before INDEX_RETENTION_DAYS (`before_retention` with `earliest`).
import { z } from "zod";
import { apiError, jsonResponse } from "../../base/api-error";
import { auditStatement, newAuditId } from "../../audit/audit-log";
import type { Principal } from "../../auth/principal";
import type { HostConfig } from "../../config/config";
import { parsePolicyDocument } from "../../config/policy-document";
import { CursorError } from "../../listings/cursor";
import { REPLAY_PAGE_CALLS, replayPage } from "../../listings/replay-reads";
import { approverPrincipals } from "../../slack/slack-principal";
import { readJsonBody } from "../request-body";

/** An ISO 8601 time in UTC (`Z`), as every time of the API is written. */
const utcTime = z.iso.datetime({ offset: false }).meta({ description: "ISO 8601 UTC, e.g. 2026-12-01T00:00:00Z" });

export const replayRequestSchema = z
  .object({
    policy: z.unknown().meta({ description: '{"tools","groups","budget"}, validated like TOOL_POLICY, APPROVER_GROUPS, MUTATION_BUDGET' }),
    since: utcTime,
    until: utcTime.optional().meta({ description: "Default: now" }),
    limit: z
      .number()
      .int()
      .min(1)
      .max(REPLAY_PAGE_CALLS)
      .optional()
      .meta({ description: `Calls judged per page, 1..${REPLAY_PAGE_CALLS} (default ${REPLAY_PAGE_CALLS}); a page may end earlier` }),
    cursor: z.string().max(2_000).optional().meta({ description: "The previous page's next_cursor (send the same policy and window)" }),
  })
  .strict();

const verdictWords =
  "ask: approve|confirm|automatic|not_in_budget|rate_limited|halted; decider: eligible|not_an_approver|self_approval_forbidden; quorum: resolved|pending:<n> (n approves counted); checkpoint: allowed|rate_limited|budget_exhausted";

const replayChangeSchema = z
  .object({
    run_id: z.string(),
    tool_call_id: z.string(),
    tool_name: z.string(),
    check: z.enum(["ask", "decider", "quorum", "checkpoint"]),
    recorded: z.string().meta({ description: verdictWords }),
    candidate: z.string().meta({ description: verdictWords }),
    principal: z.string().optional().meta({ description: "With decider: whose decision" }),
  })
  .strict()
  .meta({ id: "PolicyReplayChange" });

export const replayResponseSchema = z
  .object({
    examined: z.number().int().min(0).meta({ description: "Calls of this page judged" }),
    skipped: z
      .number()
      .int()
      .min(0)
      .meta({ description: "Calls of the window recorded before the replay index existed (first page only)" }),
    changed: z.array(replayChangeSchema),
    next_cursor: z.string().nullable(),
  })
  .strict()
  .meta({ id: "PolicyReplay" });

const DAY_MS = 86_400_000;

/** POST /api/policy/replay */
export async function handlePolicyReplay(request: Request, db: D1Database, config: HostConfig, principal: Principal): Promise<Response> {
  const body = await readJsonBody(request, replayRequestSchema);
  const checked = parsePolicyDocument(body.policy, config.MUTATION_RETENTION_DAYS, config.APPROVAL_TIMEOUT_MS);
  if (!checked.ok) {
    throw apiError(400, {
      error: "invalid_policy",
      message: checked.details.map((d) => `${d.path || "policy"}: ${d.message}`).join("; "),
      details: checked.details,
    });
  }
  const now = Date.now();
  const since = new Date(body.since).toISOString();
  const until = new Date(body.until ?? now).toISOString();
  if (since > until) {
    throw apiError(400, {
      error: "invalid_request",
      message: "since is after until.",
      details: [{ path: "since", message: "must not be after until" }],
    });
  }
  const earliest = new Date(now - config.INDEX_RETENTION_DAYS * DAY_MS).toISOString();
  if (since < earliest) {
    throw apiError(400, {
      error: "before_retention",
      message: `The index keeps calls for INDEX_RETENTION_DAYS (${config.INDEX_RETENTION_DAYS} days): since must be at or after ${earliest}.`,
      earliest,
    });
  }
  const slackListed = (principalId: string) => {
    const team = /^slack:([TE][A-Z0-9]+):/.exec(principalId)?.[1];
    return team !== undefined && approverPrincipals(config.SLACK_APPROVERS, team).includes(principalId);
  };
  let page: Awaited<ReturnType<typeof replayPage>>;
  try {
    // One statement of the request's twenty is kept for its audit entry.
    page = await replayPage(db, checked.document, { since, until, cursor: body.cursor, limit: body.limit }, { slackListed }, 1);
  } catch (err) {
    if (err instanceof CursorError) throw apiError(400, { error: "invalid_request", message: `cursor: ${err.message}` });
    throw err;
  }
  const clientIp = request.headers.get("cf-connecting-ip") ?? undefined;
  await auditStatement(db, {
    id: newAuditId(),
    at: new Date(now).toISOString(),
    principal: principal.id,
    action: "policy.replay",
    target: "policy",
    result: "ok",
    details: {
      since,
      until,
      examined: page.examined,
      changed: page.changed.length,
      ...(body.cursor !== undefined ? { cursor: body.cursor } : {}),
    },
    via: principal.credential.kind === "console_session" ? "console" : "api",
    ...(clientIp ? { client_ip: clientIp } : {}),
  }).run();
  return jsonResponse(200, { examined: page.examined, skipped: page.skipped, changed: page.changed, next_cursor: page.next_cursor });
}
