// The bench Worker's trip log (bench-only; on when the bench var BENCH_TRIPS
// is "1", never in production code): every remote call the Worker and the
// run objects start, noted as it starts and as it settles. A trip is one call
// that leaves the isolate: a D1 statement (or batch), a Durable Object RPC
// (the run's object, the storage pool, the audit queue, the rate limiter), or
// an outbound fetch (the Slack Web API, an MCP server). Inbound requests to
// the Worker are logged too, to mark where a path begins.
//
// How: the Worker hands the real Worker an env whose D1 and Durable Object
// bindings are counting proxies (tripsEnv), the run's object is built over
// the same kind of env (BenchRunObject's constructor), and the isolate's
// global fetch is wrapped once (a fetch made while the Worker handles a
// request, waitUntil work included, is told apart from a run object's by an
// AsyncLocalStorage the Worker's handling runs in). The Worker and its
// Durable Objects share one isolate under `wrangler dev`, so one log with one
// counter orders every entry; `GET /bench/trips?after=N` reads what came
// after tick N. Each proxy passes the call through and notes its start and
// its settlement; with BENCH_TRIP_DELAY_MS it first waits that long (every
// trip but the MCP requests), so a path's sequential trips show as that much
// added time each and trips beside the path add none
// (bench/phases/click-trips.ts).

import { AsyncLocalStorage } from "node:async_hooks";

/** One remote call as the log saw it. */
export interface Trip {
  /** "worker" (the Worker's request handling, its waitUntil work included) or "run" (a run's object). */
  origin: string;
  /** "rpc RUN_OBJECT.act", "d1 first SELECT ...", "fetch slack chat.update", "fetch mcp tools/call", "in POST /slack/interactivity". */
  kind: string;
  /** The log's counter when the call started and when it settled (null: not yet). */
  start: number;
  end: number | null;
  /** Wall-clock ms at the start and at settlement, to compare with clocks outside the isolate. */
  startAt: number;
  endAt: number | null;
}

/** Entries kept; older ones are dropped (a phase reads a few dozen per run). */
const MAX_TRIPS = 20_000;
const trips: Trip[] = [];
let tick = 0;
let on = false;
/** BENCH_TRIP_DELAY_MS: added before every logged trip but the MCP requests, ms (0: none). */
let delayMs = 0;

/** Turns the log on for this isolate (the first request or object that sees BENCH_TRIPS="1" does), with its delay. */
export function tripsOn(env: { BENCH_TRIPS?: string; BENCH_TRIP_DELAY_MS?: string }): boolean {
  if (env.BENCH_TRIPS === "1") {
    on = true;
    const ms = Number(env.BENCH_TRIP_DELAY_MS ?? "0");
    delayMs = Number.isFinite(ms) && ms > 0 ? ms : 0;
  }
  return on;
}

/**
 * Starts `call` as one logged trip: noted at once, sent after the delay (if any), noted again when it
 * settles. With a delay the caller gets a plain promise (an RPC promise's pipelining is lost; nothing
 * on the measured paths pipelines).
 */
function trip<T>(origin: string, kind: string, call: () => T): T {
  const done = startTrip(origin, kind);
  if (delayMs === 0 || kind.startsWith("fetch mcp ")) return noted(call(), done);
  return noted(new Promise<void>((resolve) => setTimeout(resolve, delayMs)).then(call), done) as T;
}

/** Notes a call's start; the returned function notes its settlement. */
export function startTrip(origin: string, kind: string): () => void {
  const trip: Trip = { origin, kind, start: ++tick, end: null, startAt: Date.now(), endAt: null };
  trips.push(trip);
  if (trips.length > MAX_TRIPS) trips.splice(0, trips.length - MAX_TRIPS);
  return () => {
    trip.end = ++tick;
    trip.endAt = Date.now();
  };
}

/** The entries started after `after`, and the counter now. */
export function tripsAfter(after: number): { tick: number; trips: Trip[] } {
  return { tick, trips: trips.filter((t) => t.start > after) };
}

/** `value` unchanged; `done` runs when it settles (an RPC promise keeps its pipelining: it is returned as is). */
function noted<T>(value: T, done: () => void): T {
  if (value !== null && typeof value === "object" && typeof (value as { then?: unknown }).then === "function") {
    (value as unknown as PromiseLike<unknown>).then(done, done);
  } else {
    done();
  }
  return value;
}

/** The first words of a statement: "SELECT ... FROM runs" reads as its verb and table well enough. */
function statementHead(query: string): string {
  return query.trim().replace(/\s+/g, " ").slice(0, 60);
}

const EXECUTING = new Set(["first", "all", "run", "raw"]);

function countedD1(db: D1Database, origin: string): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const statement = (s: D1PreparedStatement, query: string): D1PreparedStatement => {
    const proxy = new Proxy(s, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => statement(target.bind(...values), query);
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        if (typeof prop === "string" && EXECUTING.has(prop)) {
          return (...args: unknown[]) =>
            trip(origin, `d1 ${prop} ${statementHead(query)}`, () => (value as (...a: unknown[]) => unknown).apply(target, args));
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
    real.set(proxy, s);
    return proxy;
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => statement(target.prepare(query), query);
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) =>
          trip(origin, `d1 batch of ${statements.length}`, () => target.batch(statements.map((s) => real.get(s) ?? s)));
      }
      if (prop === "exec") return (query: string) => trip(origin, `d1 exec ${statementHead(query)}`, () => target.exec(query));
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function countedStub<T extends object>(stub: T, origin: string, binding: string): T {
  return new Proxy(stub, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      // `fetch` on a run's object is the SSE route (a stream, not a round trip the path waits on to the end); it is noted too.
      if (typeof value !== "function" || typeof prop !== "string" || prop === "then") return value;
      // Reflect.apply: on an RPC stub's method, `.apply` would itself be read as an RPC method.
      return (...args: unknown[]) =>
        trip(origin, `rpc ${binding}.${prop}`, () => Reflect.apply(value as (...a: unknown[]) => unknown, target, args));
    },
  });
}

function countedNamespace<T extends Rpc.DurableObjectBranded | undefined>(
  ns: DurableObjectNamespace<T>,
  origin: string,
  binding: string,
): DurableObjectNamespace<T> {
  return new Proxy(ns, {
    get(target, prop) {
      if (prop === "get")
        return (id: DurableObjectId, options?: DurableObjectNamespaceGetDurableObjectOptions) =>
          countedStub(target.get(id, options), origin, binding);
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const isNamespace = (v: unknown): v is DurableObjectNamespace =>
  v !== null && typeof v === "object" && typeof (v as { idFromName?: unknown }).idFromName === "function";
const isD1 = (v: unknown): v is D1Database =>
  v !== null &&
  typeof v === "object" &&
  typeof (v as { prepare?: unknown }).prepare === "function" &&
  typeof (v as { batch?: unknown }).batch === "function";

/** Per origin: the counting proxy of each env object (the Worker and its objects may be handed the same one). */
const counted = new Map<string, WeakMap<object, object>>();

/** `env` with every D1 and Durable Object binding counting its trips as `origin` (one proxy per env object and origin, so per-env caches still hit). */
export function tripsEnv<E extends object>(env: E, origin: string): E {
  const byEnv = counted.get(origin) ?? new WeakMap<object, object>();
  counted.set(origin, byEnv);
  const cached = byEnv.get(env);
  if (cached) return cached as E;
  const bindings = new Map<PropertyKey, unknown>();
  const proxy = new Proxy(env, {
    get(target, prop) {
      if (bindings.has(prop)) return bindings.get(prop);
      const value = Reflect.get(target, prop, target) as unknown;
      const wrapped = isD1(value) ? countedD1(value, origin) : isNamespace(value) ? countedNamespace(value, origin, String(prop)) : value;
      bindings.set(prop, wrapped);
      return wrapped;
    },
  });
  byEnv.set(env, proxy);
  return proxy;
}

/** What an outbound request is: a Slack Web API method, an MCP JSON-RPC method, or its host and path. */
function fetchKind(input: RequestInfo | URL, init: RequestInit | undefined): string {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const slack = /^\/api\/([a-z]+\.[A-Za-z.]+)$/.exec(url.pathname);
  if (slack) return `fetch slack ${slack[1]}`;
  if (typeof init?.body === "string") {
    try {
      const method = (JSON.parse(init.body) as { method?: unknown }).method;
      if (typeof method === "string") return `fetch mcp ${method}`;
    } catch {
      // not JSON-RPC
    }
  }
  return `fetch ${init?.method ?? (input instanceof Request ? input.method : "GET")} ${url.host}${url.pathname}`;
}

/** Set while the Worker handles a request (and in what that handling leaves to waitUntil). */
const handling = new AsyncLocalStorage<"worker">();

/** Runs the Worker's handling of one request as "worker" for the fetches it makes. */
export function asWorker<T>(fn: () => T): T {
  return handling.run("worker", fn);
}

const realFetch = globalThis.fetch;
/** Wraps the isolate's fetch once (at module load); it notes nothing until the log is on. */
globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
  if (!on) return realFetch(input, init);
  return trip(handling.getStore() ?? "run", fetchKind(input, init), () => realFetch(input, init));
}) as typeof fetch;
