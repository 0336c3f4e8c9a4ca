// The benchmark's Worker entry (bench/wrangler.bench.toml, never deployed).
// Every normal route is the real Worker's fetch, untouched. It adds bench-only
// routes, answered only when the BENCH var is "1" and the same bearer token
// as /api/* is presented:
//
//   POST /bench/runs/{run_id}/append?count=N&bytes=B&label=L
//        appends N synthetic assistant_message events to a *running* run
//        through RunObject's own append + fan-out path (BenchRunObject).
//   GET  /bench/raw/{name}/events     SSE live tail of a RawFloorObject
//   GET  /bench/raw/{name}/ws         the same tail on a hibernatable WebSocket (Upgrade: websocket)
//   GET  /bench/raw/{name}/stats      {"subscribers", "last_sequence"}
//   POST /bench/raw/{name}/append?count=N&bytes=B&label=L
//        the same N events through the "raw floor": one SQLite insert and one
//        enqueue per subscriber, no engine logic at all.
//   GET  /bench/storage-pool
//        GET /api/storage-pool's answer plus `high_water`: the most slots the
//        pool has had in use at once, and `waits`: how long each granted
//        acquire waited for its slot, ms (BenchStoragePool).
//   GET  /bench/storage-pool/acquires
//        every acquire the pool saw: holder and arrival time (epoch ms).
//   GET  /bench/runs/{run_id}/storage
//        every D1 statement of the run's mutation outcomes: kind and start
//        time (epoch ms) (BenchRunObject).
//   POST /bench/index/runs?count=N
//        writes N ended runs straight into the D1 run index (one statement;
//        the metrics triggers count them), for the scrape's cost over many runs.
//   GET  /bench/trips?after=N
//        the trip log (bench/bench-trips.ts, on with BENCH_TRIPS="1"): every
//        D1 statement, Durable Object RPC and outbound fetch the Worker and the
//        run objects started after tick N, with start and end ticks.
//   POST /bench/checkpoint/prepare, POST /bench/checkpoint/{mutation_id}
//        phase 19's checkpoint with and without section 23's halt and limit
//        clauses (bench/bench-checkpoint.ts).
//   POST /bench/audit/backlog?count=N
//        inserts N unsealed audit entries straight into D1 (auditStatement,
//        batches of 500), waking nobody.
//   POST /bench/audit/seal
//        seals every unsealed entry through the one sealer object (its seal()
//        RPC, again while it says there is more); answers {"sealed","head"}.
//   GET  /bench/auth/bare             204 after the config check, nothing else
//   GET  /bench/auth/check            the same, then the real authenticate()
//        (src/auth/authenticate.ts) on the request's credential: 204 for a
//        principal, else 401. These two take any credential, or none (the
//        one under test is the point), and touch no state but what
//        authenticate() itself reads (phases/auth-cost.ts).
//
// Bench-only storage seams, set by the bench's vars, never in production
// code: BENCH_STORAGE_DELAY_MS adds a fixed delay before every pool acquire
// (releases are off the critical path, see BenchStoragePool.release) and every D1 statement of the outcome ledger (a remote
// pool and a remote D1 primary); BENCH_D1_STALL="1" makes every D1 statement
// of the outcome ledger wait forever (a stalled backend); BENCH_SEALER_OFF="1"
// gives the real Worker an AUDIT_SEALER whose wake() does nothing (entries are
// written as always and never sealed: the audit chain off, phase 18's control).
//
// Both kinds of route take the same hops (client → Worker → Durable Object
// RPC for appends; client → Worker → Durable Object fetch stream for SSE),
// so engine/raw ratios isolate what the engine does on top of the floor.
//
// Worker code: checked by tsconfig.json with the workers types; tsconfig.node.json,
// which covers the rest of bench/, excludes this file.
import { DurableObject } from "cloudflare:workers";
import { RunObject } from "../durable-objects/run-object";
import { isAuthorized } from "../src/auth/api-token";
import { loadConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import realWorker from "../src/index";
import { authenticate } from "../src/auth/authenticate";

import { StoragePool } from "../durable-objects/storage-pool";

export { AuditQueue } from "../durable-objects/audit-queue";
export { AuditSealer } from "../durable-objects/audit-sealer";
export { HaltCanceller } from "../durable-objects/halt-canceller";
import { auditStatement, newAuditId } from "../src/audit/audit-log";
import { sealerStub } from "../src/audit/wake-sealer";
import { checkpointRoute } from "./bench-checkpoint";
export { RateLimiter } from "../durable-objects/rate-limiter";
import type { OutcomeDb, OutcomeStatement } from "../src/outcomes/mutation-outcomes";
import { STORAGE_POOL_NAME, type AcquireResult, type StoragePoolStats } from "../src/outcomes/storage-pool-rpc";
import { isRunId } from "../src/ids";
import { asWorker, startTrip, tripsAfter, tripsEnv, tripsOn } from "./bench-trips";
import { type PeerEnv, peerRoute } from "./agents-peer";
export { AgentsPeer } from "./agents-peer";

// Not exported: workerd rejects a Worker module exporting anything but handlers and classes.
/** Events per append request: bounds one RPC's synchronous work and its response time. */
const MAX_APPEND_COUNT = 10_000;
/** Same ceiling as a scripted turn's text (src/http/trigger-request.ts). */
const MAX_TEXT_BYTES = 32_768;
/** The label leads the text so a client can find its probe without parsing JSON. */
const MAX_LABEL_CHARS = 64;

export interface BenchEnv extends Omit<Env, "RUN_OBJECT" | "STORAGE_POOL">, PeerEnv {
  RUN_OBJECT: DurableObjectNamespace<BenchRunObject>;
  STORAGE_POOL: DurableObjectNamespace<BenchStoragePool>;
  RAW_FLOOR: DurableObjectNamespace<RawFloorObject>;
  /** Bench routes answer only when this is "1" (wrangler.bench.toml sets it). */
  BENCH?: string;
  /** Bench seam: ms added before every pool call and every outcome D1 statement ("0" or absent: none). */
  BENCH_STORAGE_DELAY_MS?: string;
  /** Bench seam: "1" stalls every outcome D1 statement forever. */
  BENCH_D1_STALL?: string;
  /** Bench seam: "1" logs every remote trip of the Worker and the run objects (bench/bench-trips.ts). */
  BENCH_TRIPS?: string;
  /** Bench seam, with BENCH_TRIPS: ms added before every logged trip but the MCP requests. */
  BENCH_TRIP_DELAY_MS?: string;
  /** Bench seam: "1" makes the sealer's wake() a no-op for the real Worker (the audit chain off). */
  BENCH_SEALER_OFF?: string;
}

/** Audit entries per D1 batch of /bench/audit/backlog (the sealer's own page size). */
const AUDIT_BACKLOG_BATCH = 500;

/** Entries kept in each bench log (a phase needs a few hundred); older ones are dropped. */
const MAX_LOG_ENTRIES = 20_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function storageDelayMs(env: BenchEnv): number {
  const ms = Number(env.BENCH_STORAGE_DELAY_MS ?? "0");
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

function pushBounded<T>(log: T[], entry: T): void {
  log.push(entry);
  if (log.length > MAX_LOG_ENTRIES) log.splice(0, log.length - MAX_LOG_ENTRIES);
}

/** One outcome D1 statement as the bench seam saw it. */
export interface StorageLogEntry {
  /** The statement's first words (e.g. "INSERT INTO mutation_outcomes", "UPDATE mutation_outcomes AS m"). */
  kind: string;
  /** When it was issued, epoch ms (before any seam delay). */
  at: number;
}

export interface AppendResult {
  appended: number;
  /** Sequence of the last event appended; null when nothing was (run already terminal). */
  last_sequence: number | null;
}

/** `label` then "x" up to `bytes` (ASCII, so characters are bytes). */
function syntheticText(label: string, bytes: number): string {
  return label.length >= bytes ? label : label + "x".repeat(bytes - label.length);
}

/**
 * The real RunObject plus one RPC method. Appends go through appendEvent, the
 * exact path real events take: envelope, JSON, SQLite insert, retention cap,
 * one encoded frame fanned out to every live subscriber.
 */
export class BenchRunObject extends RunObject {
  readonly #storageLog: StorageLogEntry[] = [];

  /** With BENCH_TRIPS="1", the run's object is built over an env whose D1 and Durable Object bindings log their trips. */
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, tripsOn(env as unknown as BenchEnv) ? tripsEnv(env, "run") : env);
  }

  /** The outcome ledger's D1, behind the bench seams (logged always; delayed or stalled when the bench says so). */
  protected override outcomeDb(): OutcomeDb {
    const db = super.outcomeDb();
    const env = this.env as unknown as BenchEnv;
    const delayMs = storageDelayMs(env);
    const stall = env.BENCH_D1_STALL === "1";
    const log = this.#storageLog;
    const statement = (query: string, values: unknown[]): OutcomeStatement => {
      const run = async <R>(execute: (s: OutcomeStatement) => Promise<R>): Promise<R> => {
        pushBounded(log, { kind: query.trim().split(/\s+/).slice(0, 3).join(" "), at: Date.now() });
        if (stall) await new Promise<never>(() => {}); // a backend that never answers
        if (delayMs > 0) await sleep(delayMs);
        return execute(db.prepare(query).bind(...values));
      };
      return {
        bind: (...bound: unknown[]) => statement(query, bound),
        first: <T>() => run((s) => s.first<T>()),
        all: <T>() => run((s) => s.all<T>()),
      };
    };
    return { prepare: (query: string) => statement(query, []) };
  }

  async benchStorageLog(): Promise<StorageLogEntry[]> {
    return [...this.#storageLog];
  }

  async benchAppend(count: number, textBytes: number, label: string): Promise<AppendResult> {
    const text = syntheticText(label, textBytes);
    let appended = 0;
    let last: number | null = null;
    for (let i = 0; i < count; i++) {
      const event = this.appendEvent("assistant_message", { text });
      // null: the run is terminal (terminal fencing); appending more would be a bug.
      if (!event) break;
      appended++;
      last = event.sequence;
    }
    return { appended, last_sequence: last };
  }
}

/**
 * The real storage pool plus a high-water mark of its slots in use, taken
 * inside the object right after every step that can grant a slot (an acquire
 * answered at once, a release or an alarm handing freed slots to the line),
 * and the wait of every granted acquire. Sampling GET /api/storage-pool from
 * outside cannot see the mark under `wrangler dev`: the Run objects, the pool
 * and local D1 share one workerd event loop, so a slot's whole
 * acquire → D1 → release chain runs between two reads of the loop's sockets,
 * and an HTTP request only ever arrives when no slot is held. Everything
 * lives in memory: it starts empty with the instance.
 */
export class BenchStoragePool extends StoragePool {
  #highWater = 0;
  /** Per granted acquire, ms from its arrival to its grant (0: at once). */
  readonly #waits: number[] = [];
  readonly #acquires: { holder: string; at: number }[] = [];

  override acquire(holder: string): AcquireResult;
  override acquire(holder: string, waitMs?: number): AcquireResult | Promise<AcquireResult>;
  override acquire(holder: string, waitMs?: number): AcquireResult | Promise<AcquireResult> {
    const arrived = Date.now();
    pushBounded(this.#acquires, { holder, at: arrived });
    const delayMs = storageDelayMs(this.env as unknown as BenchEnv);
    if (delayMs === 0) return this.#acquire(holder, waitMs ?? 0, arrived);
    // The seam's delay is part of the caller's time: it has that much less to wait in line.
    return sleep(delayMs).then(() => this.#acquire(holder, Math.max(0, (waitMs ?? 0) - delayMs), arrived));
  }

  /**
   * Not delayed by the seam: release is synchronous in the pool's signature,
   * and it is off the caller's critical path (the guard never awaits it), so
   * a delay here could only hold a slot longer, which the one-run-at-a-time
   * delay phase never contends for.
   */
  override release(leaseId: string): { released: boolean } {
    const result = super.release(leaseId);
    this.#mark(); // the freed slot went to the head of the line, if anyone waited
    return result;
  }

  override async alarm(): Promise<void> {
    await super.alarm();
    this.#mark(); // reclaimed slots were handed to the line
  }

  benchStats(): StoragePoolStats & { high_water: number; waits: number[] } {
    return { ...this.stats(), high_water: this.#highWater, waits: [...this.#waits] };
  }

  benchAcquires(): { holder: string; at: number }[] {
    return [...this.#acquires];
  }

  #acquire(holder: string, waitMs: number, arrived: number): AcquireResult | Promise<AcquireResult> {
    const result = super.acquire(holder, waitMs);
    // After rejections too, so a pool somehow past its capacity would show here.
    this.#mark();
    const granted = (r: AcquireResult): AcquireResult => {
      if (r.ok) pushBounded(this.#waits, Date.now() - arrived);
      return r;
    };
    return result instanceof Promise ? result.then(granted) : granted(result);
  }

  #mark(): void {
    this.#highWater = Math.max(this.#highWater, this.stats().in_use);
  }
}

const encoder = new TextEncoder();

/**
 * The floor to compare the engine against: one SQLite row and one shared
 * encoded frame enqueued on each subscriber's stream, nothing else (no run
 * record, no terminal fencing, no replay, no backpressure handling). Its
 * event JSON carries the same envelope fields as the engine's so both put the
 * same bytes on the wire.
 */
export class RawFloorObject extends DurableObject<BenchEnv> {
  #sequence = 0;
  readonly #subscribers = new Set<ReadableStreamDefaultController<Uint8Array>>();

  constructor(ctx: DurableObjectState, env: BenchEnv) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS events (sequence INTEGER PRIMARY KEY, type TEXT NOT NULL, json TEXT NOT NULL)`);
    const row = sql.exec<{ last: number | null }>(`SELECT MAX(sequence) AS last FROM events`).toArray()[0];
    this.#sequence = row?.last ?? 0;
  }

  /**
   * A live tail only: the stream starts with the next appended event. With `Upgrade: websocket`, a
   * socket accepted with the hibernation API (as the engine's and the peer's are) that gets each
   * event's JSON: the floor of the engine's WebSocket, one row stored before each send.
   */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
      const { 0: client, 1: server } = new WebSocketPair();
      this.ctx.acceptWebSocket(server);
      return new Response(null, { status: 101, webSocket: client });
    }
    let own: ReadableStreamDefaultController<Uint8Array> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        own = controller;
        this.#subscribers.add(controller);
      },
      cancel: () => {
        if (own) this.#subscribers.delete(own);
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" } });
  }

  async stats(): Promise<{ subscribers: number; last_sequence: number }> {
    return { subscribers: this.#subscribers.size + this.ctx.getWebSockets().length, last_sequence: this.#sequence };
  }

  async append(count: number, textBytes: number, label: string): Promise<AppendResult> {
    const text = syntheticText(label, textBytes);
    const name = this.ctx.id.name ?? "raw";
    for (let i = 0; i < count; i++) {
      const sequence = ++this.#sequence;
      const json = JSON.stringify({
        protocol_version: "v2",
        sequence,
        run_id: name,
        channel_id: "api",
        type: "assistant_message",
        at: new Date().toISOString(),
        text,
      });
      this.ctx.storage.sql.exec(`INSERT INTO events (sequence, type, json) VALUES (?, ?, ?)`, sequence, "assistant_message", json);
      for (const ws of this.ctx.getWebSockets()) {
        try {
          ws.send(json);
        } catch {
          // closed under us
        }
      }
      if (this.#subscribers.size === 0) continue;
      const frame = encoder.encode(`id: ${sequence}\nevent: assistant_message\ndata: ${json}\n\n`);
      for (const controller of this.#subscribers) {
        try {
          controller.enqueue(frame);
        } catch {
          // The client went away between cancel and now; forget it.
          this.#subscribers.delete(controller);
        }
      }
    }
    return { appended: count, last_sequence: count > 0 ? this.#sequence : null };
  }
}

function json(status: number, body: unknown): Response {
  return Response.json(body, { status });
}

/** count, bytes and label from the query string, validated; a string is the 400 message. */
function appendParams(url: URL): { count: number; bytes: number; label: string } | string {
  const count = Number(url.searchParams.get("count") ?? "1");
  const bytes = Number(url.searchParams.get("bytes") ?? "0");
  const label = url.searchParams.get("label") ?? "";
  if (!Number.isInteger(count) || count < 1 || count > MAX_APPEND_COUNT) return `count must be an integer in 1..${MAX_APPEND_COUNT}`;
  if (!Number.isInteger(bytes) || bytes < 0 || bytes > MAX_TEXT_BYTES) return `bytes must be an integer in 0..${MAX_TEXT_BYTES}`;
  if (label.length > MAX_LABEL_CHARS || !/^[A-Za-z0-9_-]*$/.test(label)) return `label must be 0..${MAX_LABEL_CHARS} of [A-Za-z0-9_-]`;
  return { count, bytes, label };
}

const RUN_APPEND = /^\/bench\/runs\/([^/]+)\/append$/;
const RUN_STORAGE = /^\/bench\/runs\/([^/]+)\/storage$/;
const RAW_EVENTS = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/events$/;
const RAW_WS = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/ws$/;
const RAW_APPEND = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/append$/;
const RAW_STATS = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/stats$/;

async function benchRoute(request: Request, env: BenchEnv, url: URL): Promise<Response> {
  // Same gate as /api/*: a configured token, presented as a bearer.
  const loaded = loadConfig(env);
  if (loaded.state !== "ready") return json(503, { error: loaded.state, message: loaded.message });
  const apiToken = loaded.config.API_TOKEN;
  if (apiToken === undefined || !(await isAuthorized(request.headers.get("authorization"), apiToken))) {
    return json(401, { error: "unauthorized", message: "Send Authorization: Bearer <API_TOKEN>." });
  }
  const path = url.pathname;
  if (path.startsWith("/bench/peer/")) {
    const peer = await peerRoute(request, env, path, () => appendParams(url));
    if (peer) return peer;
  }
  let match: RegExpExecArray | null;
  if (request.method === "POST" && (match = RUN_APPEND.exec(path))) {
    const params = appendParams(url);
    if (typeof params === "string") return json(400, { error: "invalid_request", message: params });
    const runId = match[1] ?? "";
    // As the real router does: no Durable Object is woken for an id that can't be a run.
    if (!isRunId(runId)) return json(404, { error: "not_found", message: `No run ${JSON.stringify(runId)}.` });
    const stub = env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId));
    const result = await stub.benchAppend(params.count, params.bytes, params.label);
    // 409: the run is unknown or already terminal; a bench run must be kept running.
    return json(result.appended > 0 ? 200 : 409, result);
  }
  if (request.method === "GET" && (match = RAW_WS.exec(path))) {
    return env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? "")).fetch(request);
  }
  if (request.method === "GET" && (match = RAW_EVENTS.exec(path))) {
    return env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? "")).fetch("https://raw-floor/events");
  }
  if (request.method === "GET" && (match = RAW_STATS.exec(path))) {
    return json(200, await env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? "")).stats());
  }
  if (request.method === "GET" && (match = RUN_STORAGE.exec(path))) {
    const runId = match[1] ?? "";
    if (!isRunId(runId)) return json(404, { error: "not_found", message: `No run ${JSON.stringify(runId)}.` });
    return json(200, { statements: await env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId)).benchStorageLog() });
  }
  if (request.method === "GET" && path === "/bench/trips") {
    const after = Number(url.searchParams.get("after") ?? "0");
    if (!Number.isInteger(after) || after < 0) return json(400, { error: "invalid_request", message: "after: an integer >= 0" });
    return json(200, tripsAfter(after));
  }
  if (request.method === "POST" && path === "/bench/index/runs") {
    const count = Number(url.searchParams.get("count") ?? "0");
    if (!Number.isInteger(count) || count < 1 || count > 100_000) {
      return json(400, { error: "invalid_request", message: "count: an integer 1..100000" });
    }
    const prefix = `run_bench${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}_`;
    await env.DB.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
       INSERT INTO runs (run_id, channel_id, user_id, delivery_id, source, status, created_at, ended_at)
       SELECT ? || i, 'C-bench', 'U-bench', NULL, 'api', 'completed', '2026-11-01T00:00:00.000Z', '2026-11-01T00:01:00.000Z' FROM k`,
    )
      .bind(count, prefix)
      .run();
    return json(200, { inserted: count });
  }
  if (request.method === "GET" && path === "/bench/storage-pool/acquires") {
    return json(200, { acquires: await env.STORAGE_POOL.get(env.STORAGE_POOL.idFromName(STORAGE_POOL_NAME)).benchAcquires() });
  }
  if (request.method === "GET" && path === "/bench/storage-pool") {
    // The one global instance the engine uses (globalStoragePool's name).
    return json(200, await env.STORAGE_POOL.get(env.STORAGE_POOL.idFromName(STORAGE_POOL_NAME)).benchStats());
  }
  const checkpoint = await checkpointRoute(request, env.DB, url);
  if (checkpoint !== null) return checkpoint;
  if (request.method === "POST" && path === "/bench/audit/backlog") {
    const count = Number(url.searchParams.get("count") ?? "0");
    if (!Number.isInteger(count) || count < 1 || count > 100_000) {
      return json(400, { error: "invalid_request", message: "count: an integer 1..100000" });
    }
    for (let from = 0; from < count; from += AUDIT_BACKLOG_BATCH) {
      const at = new Date().toISOString();
      await env.DB.batch(
        Array.from({ length: Math.min(AUDIT_BACKLOG_BATCH, count - from) }, (_, i) =>
          auditStatement(env.DB, {
            id: newAuditId(),
            at,
            principal: "token:bench",
            action: "token.create",
            target: `token:bench-${from + i}`,
            result: "ok",
            via: "api",
            details: { roles: ["viewer"], owner: null },
          }),
        ),
      );
    }
    return json(200, { inserted: count });
  }
  if (request.method === "POST" && path === "/bench/audit/seal") {
    const stub = sealerStub(env as unknown as Env);
    let sealed = 0;
    for (;;) {
      const result = await stub.seal();
      sealed += result.sealed;
      if (result.more !== true) return json(200, { sealed, head: result.head });
    }
  }
  if (request.method === "POST" && (match = RAW_APPEND.exec(path))) {
    const params = appendParams(url);
    if (typeof params === "string") return json(400, { error: "invalid_request", message: params });
    const stub = env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? ""));
    return json(200, await stub.append(params.count, params.bytes, params.label));
  }
  return json(404, { error: "not_found", message: `No bench route for ${request.method} ${path}.` });
}

/** The auth-cost pair: the same work but for authenticate(), so their difference is its cost per request. */
async function authRoute(request: Request, env: BenchEnv, ctx: ExecutionContext, check: boolean): Promise<Response> {
  const loaded = loadConfig(env);
  if (loaded.state !== "ready") return json(503, { error: loaded.state, message: loaded.message });
  if (!check) return new Response(null, { status: 204 });
  const auth = await authenticate(request.headers, { db: env.DB, config: loaded.config, waitUntil: (p) => ctx.waitUntil(p) });
  return auth.kind === "authenticated" ? new Response(null, { status: 204 }) : json(401, { error: "unauthorized", message: auth.kind });
}

/** An AUDIT_SEALER binding whose stubs' wake() does nothing (BENCH_SEALER_OFF): the audit chain off. */
const IDLE_SEALER = { idFromName: (name: string) => name, get: () => ({ wake: async () => {} }) };
const sealerOffEnvs = new WeakMap<object, BenchEnv>();
function withSealerOff(env: BenchEnv): BenchEnv {
  if (env.BENCH_SEALER_OFF !== "1") return env;
  let off = sealerOffEnvs.get(env);
  if (off === undefined) {
    off = new Proxy(env, { get: (target, prop) => (prop === "AUDIT_SEALER" ? IDLE_SEALER : Reflect.get(target, prop, target)) });
    sealerOffEnvs.set(env, off);
  }
  return off;
}

export default {
  fetch(request: Request, given: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    const env = withSealerOff(given);
    const url = new URL(request.url);
    if (env.BENCH === "1" && request.method === "GET" && url.pathname === "/bench/auth/bare") return authRoute(request, env, ctx, false);
    if (env.BENCH === "1" && request.method === "GET" && url.pathname === "/bench/auth/check") return authRoute(request, env, ctx, true);
    if (env.BENCH === "1" && url.pathname.startsWith("/bench/")) return benchRoute(request, given, url);
    // BenchRunObject is a RunObject, so the real Worker's view of the binding holds.
    if (!tripsOn(env)) return realWorker.fetch(request, env as unknown as Env, ctx);
    const done = startTrip("worker", `in ${request.method} ${url.pathname}`);
    const response = asWorker(() => realWorker.fetch(request, tripsEnv(env, "worker") as unknown as Env, ctx));
    response.then(done, done);
    return response;
  },
} satisfies ExportedHandler<BenchEnv>;
