// Bench-only routes for phase 19 (contract section 23's cost, bench/phases/halts-audit.ts),
// answered by the bench Worker (bench/bench-worker.ts) behind its BENCH var and API token:
//
//   POST /bench/checkpoint/prepare?count=N&window=W
//        inserts N unresolved rows to checkpoint (each with its own arguments,
//        so no prior row blocks it), W rows already dispatched within the
//        last hour (a busy limit window), and, once, three active halts that
//        cover none of them (server:bench-other, tool:mcp__other__x,
//        principal:token:someone-else); answers the N mutation ids.
//   POST /bench/checkpoint/{mutation_id}?variant=guarded|bare
//        runs one checkpoint on the row and nothing else: `guarded` is the
//        engine's own statement (markDispatchedUnlessPrior, its halt clause
//        reading the active halts and BENCH_LIMITS' two limit clauses),
//        `bare` the same UPDATE without the halt and limit clauses (the
//        checkpoint as it was before section 23). 200 {"dispatched": bool}.
//
// Timed by the client around the request, alternating the variants, so both
// see the same machine and the same HTTP hop; the difference is the checks.
import { insertIntent, markDispatchedUnlessPrior, newMutationId, type OutcomeDb } from "../src/outcomes/mutation-outcomes";
import { D1_NOW, engageHalt } from "../src/outcomes/halts";
import type { MutationLimit } from "../src/policy/mutation-limits";

/** The limits of the guarded variant: a busy tool's hourly cap by person and overall, far from full. */
const BENCH_LIMITS: readonly MutationLimit[] = [
  { max: 10_000, per_s: 3_600, by: "all", tool: "mcp__demo__create_dashboard" },
  { max: 10_000, per_s: 3_600, by: "principal", tool: null },
];
const TOOL = "mcp__demo__create_dashboard";
const MAX_PREPARE = 10_000;

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** The checkpoint before section 23: unresolved, undispatched, no unknown prior row; no halt or limit clause. */
async function bareCheckpoint(db: D1Database, mutationId: string): Promise<boolean> {
  const row = await db
    .prepare(
      `UPDATE mutation_outcomes AS m SET dispatched = 1, dispatched_at = ${D1_NOW}
       WHERE m.mutation_id = ? AND m.state = 'unresolved' AND m.dispatched = 0
         AND NOT EXISTS (
           SELECT 1 FROM mutation_outcomes AS p
           WHERE p.channel_id = m.channel_id AND p.tool_name = m.tool_name AND p.arguments_digest = m.arguments_digest
             AND p.run_id <> m.run_id AND p.state IN ('unresolved', 'outcome_unknown') AND p.mutation_id < m.mutation_id
         )
       RETURNING mutation_id`,
    )
    .bind(mutationId)
    .first();
  return row !== null;
}

async function prepare(db: D1Database, count: number, window: number): Promise<string[]> {
  const engaged = await db.prepare(`SELECT COUNT(*) AS n FROM halts WHERE reason = 'bench' AND status = 'active'`).first<{ n: number }>();
  if (Number(engaged?.n ?? 0) === 0) {
    for (const scope of [
      { kind: "server", value: "bench-other" },
      { kind: "tool", value: "mcp__other__x" },
      { kind: "principal", value: "token:someone-else" },
    ] as const) {
      await engageHalt(
        db,
        { scope, scopePerson: null, reason: "bench", engagedBy: "token:root", required: 1, cancelRuns: false },
        () => [],
      );
    }
  }
  const ids: string[] = [];
  const stamp = crypto.randomUUID();
  for (let i = 0; i < count + window; i++) {
    const mutationId = newMutationId();
    await insertIntent(db as unknown as OutcomeDb, {
      mutationId,
      runId: `run_bench_${stamp}_${i}`,
      channelId: "C-bench",
      deliveryId: null,
      toolCallId: "call-1",
      approvalId: `appr_${i}`,
      toolName: TOOL,
      argumentsDigest: `sha256:${stamp}-${i}`,
      approvedBy: "token:root",
      approvedAt: new Date().toISOString(),
      server: "demo",
      requestedBy: "token:root",
      requesterPerson: null,
    });
    if (i < window) {
      await db
        .prepare(
          `UPDATE mutation_outcomes SET dispatched = 1, dispatched_at = ${D1_NOW}, state = 'completed', settled_at = ${D1_NOW} WHERE mutation_id = ?`,
        )
        .bind(mutationId)
        .run();
    } else ids.push(mutationId);
  }
  return ids;
}

const CHECKPOINT = /^\/bench\/checkpoint\/([^/]+)$/;

/** The phase-17 routes, or null for any other path. */
export async function checkpointRoute(request: Request, db: D1Database, url: URL): Promise<Response | null> {
  if (request.method !== "POST") return null;
  if (url.pathname === "/bench/checkpoint/prepare") {
    const count = Number(url.searchParams.get("count") ?? "0");
    const window = Number(url.searchParams.get("window") ?? "0");
    if (!Number.isInteger(count) || count < 1 || count > MAX_PREPARE || !Number.isInteger(window) || window < 0 || window > MAX_PREPARE) {
      return json(400, { error: "invalid_request", message: `count: 1..${MAX_PREPARE}; window: 0..${MAX_PREPARE}` });
    }
    return json(200, { mutation_ids: await prepare(db, count, window) });
  }
  const match = CHECKPOINT.exec(url.pathname);
  if (match === null) return null;
  const variant = url.searchParams.get("variant");
  const id = decodeURIComponent(match[1] ?? "");
  if (variant === "bare") return json(200, { dispatched: await bareCheckpoint(db, id) });
  if (variant === "guarded") {
    const result = await markDispatchedUnlessPrior(db as unknown as OutcomeDb, id, BENCH_LIMITS);
    return json(200, { dispatched: result.ok, ...(result.ok ? {} : { error: result.error }) });
  }
  return json(400, { error: "invalid_request", message: "variant: guarded or bare" });
}
