// The benchmark's Worker entry (bench/wrangler.bench.toml, never deployed).
// Every normal route is the real Worker's fetch, untouched. It adds bench-only
// routes, answered only when the BENCH var is "1" and the same bearer token
// as /api/* is presented:
//
//   POST /bench/runs/{run_id}/append?count=N&bytes=B&label=L
//        appends N synthetic assistant_message events to a *running* run
//        through RunObject's own append + fan-out path (BenchRunObject).
//   GET  /bench/raw/{name}/events     SSE live tail of a RawFloorObject
//   GET  /bench/raw/{name}/stats      {"subscribers", "last_sequence"}
//   POST /bench/raw/{name}/append?count=N&bytes=B&label=L
//        the same N events through the "raw floor": one SQLite insert and one
//        enqueue per subscriber, no engine logic at all.
//   GET  /bench/storage-pool
//        GET /api/storage-pool's answer plus `high_water`: the most slots the
//        pool has had in use at once (BenchStoragePool).
//
// Both kinds of route take the same hops (client → Worker → Durable Object
// RPC for appends; client → Worker → Durable Object fetch stream for SSE),
// so engine/raw ratios isolate what the engine does on top of the floor.
//
// Worker code: checked by tsconfig.json with the workers types; tsconfig.node.json,
// which covers the rest of bench/, excludes this file.
import { DurableObject } from "cloudflare:workers";
import { RunObject } from "../durable-objects/run-object";
import { isAuthorized } from "../src/http/auth";
import { loadConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import realWorker from "../src/index";

import { StoragePool } from "../durable-objects/storage-pool";
import { STORAGE_POOL_NAME, type AcquireResult, type StoragePoolStats } from "../src/outcomes/storage-pool-rpc";
import { isRunId } from "../src/ids";

// Not exported: workerd rejects a Worker module exporting anything but handlers and classes.
/** Events per append request: bounds one RPC's synchronous work and its response time. */
const MAX_APPEND_COUNT = 10_000;
/** Same ceiling as a scripted turn's text (src/http/trigger-request.ts). */
const MAX_TEXT_BYTES = 32_768;
/** The label leads the text so a client can find its probe without parsing JSON. */
const MAX_LABEL_CHARS = 64;

export interface BenchEnv extends Omit<Env, "RUN_OBJECT" | "STORAGE_POOL"> {
  RUN_OBJECT: DurableObjectNamespace<BenchRunObject>;
  STORAGE_POOL: DurableObjectNamespace<BenchStoragePool>;
  RAW_FLOOR: DurableObjectNamespace<RawFloorObject>;
  /** Bench routes answer only when this is "1" (wrangler.bench.toml sets it). */
  BENCH?: string;
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
 * right after every acquire, inside the object. Sampling GET /api/storage-pool
 * from outside cannot see it under `wrangler dev`: the Run objects, the pool
 * and local D1 share one workerd event loop, so a slot's whole
 * acquire → D1 → release chain runs between two reads of the loop's sockets,
 * and an HTTP request only ever arrives when no slot is held. The mark lives
 * in memory: it starts at 0 with the instance.
 */
export class BenchStoragePool extends StoragePool {
  #highWater = 0;

  override acquire(holder: string): AcquireResult {
    const result = super.acquire(holder);
    // After rejections too, so a pool somehow past its capacity would show here.
    this.#highWater = Math.max(this.#highWater, this.stats().in_use);
    return result;
  }

  benchStats(): StoragePoolStats & { high_water: number } {
    return { ...this.stats(), high_water: this.#highWater };
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

  /** A live tail only: the stream starts with the next appended event. */
  override async fetch(_request: Request): Promise<Response> {
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
    return { subscribers: this.#subscribers.size, last_sequence: this.#sequence };
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
const RAW_EVENTS = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/events$/;
const RAW_APPEND = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/append$/;
const RAW_STATS = /^\/bench\/raw\/([A-Za-z0-9_-]{1,64})\/stats$/;

async function benchRoute(request: Request, env: BenchEnv, url: URL): Promise<Response> {
  // Same gate as /api/*: a configured token, presented as a bearer.
  const loaded = loadConfig(env);
  if (loaded.state !== "ready") return json(503, { error: loaded.state, message: loaded.message });
  if (!(await isAuthorized(request.headers.get("authorization"), loaded.config.API_TOKEN))) {
    return json(401, { error: "unauthorized", message: "Send Authorization: Bearer <API_TOKEN>." });
  }
  const path = url.pathname;
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
  if (request.method === "GET" && (match = RAW_EVENTS.exec(path))) {
    return env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? "")).fetch("https://raw-floor/events");
  }
  if (request.method === "GET" && (match = RAW_STATS.exec(path))) {
    return json(200, await env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? "")).stats());
  }
  if (request.method === "GET" && path === "/bench/storage-pool") {
    // The one global instance the engine uses (globalStoragePool's name).
    return json(200, await env.STORAGE_POOL.get(env.STORAGE_POOL.idFromName(STORAGE_POOL_NAME)).benchStats());
  }
  if (request.method === "POST" && (match = RAW_APPEND.exec(path))) {
    const params = appendParams(url);
    if (typeof params === "string") return json(400, { error: "invalid_request", message: params });
    const stub = env.RAW_FLOOR.get(env.RAW_FLOOR.idFromName(match[1] ?? ""));
    return json(200, await stub.append(params.count, params.bytes, params.label));
  }
  return json(404, { error: "not_found", message: `No bench route for ${request.method} ${path}.` });
}

export default {
  fetch(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (env.BENCH === "1" && url.pathname.startsWith("/bench/")) return benchRoute(request, env, url);
    // BenchRunObject is a RunObject, so the real Worker's view of the binding holds.
    return realWorker.fetch(request, env as unknown as Env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
