// The benchmark's HTTP client over loopback: control requests to the
// engine's API go through the engine client (src/client) with a node:http
// fetch underneath; SSE subscriptions and timed reads stay on node:http
// directly, because they are the measuring instrument (the time a frame's
// chunk reaches this process is taken in the socket's data handler, before
// any parsing) and web streams would add client work per frame.
import http from "node:http";
import { performance } from "node:perf_hooks";
import { EngineClient, type FetchLike } from "../src/client";
import { DELIVERY_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from "./settings";

// node:http rather than fetch: an explicit socket pool per kind of request (so
// 1,000 concurrent SSE responses can't queue behind a per-origin limit), and
// less client work per frame than web streams.
// 64: phase 6 keeps 50 approvals plus the pool sampler in flight.
const apiAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
// One socket per subscriber; Infinity so 1,000 idle streams never queue.
const sseAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

export interface ApiResult<T> {
  status: number;
  body: T;
}

export interface Frame {
  id: number;
  event: string;
  data: string;
}

/** One open SSE response. */
export interface Subscription {
  close(): void;
}

/** CPU time the server's two workerd processes have used so far, ns. */
export interface CpuSample {
  runtime: number;
  proxy: number;
}

/** Requests to one server over one path (wrangler dev's port, or the runtime's). */
export class Client {
  /** The engine's API, through the same socket pool as `api`. */
  readonly engine: EngineClient;

  constructor(
    readonly label: string,
    readonly url: string,
    readonly token: string,
    /** Reads the server's CPU counters; outside timed sections only. */
    readonly cpu: () => CpuSample,
  ) {
    this.engine = new EngineClient({ baseUrl: url, token, fetch: nodeHttpFetch(apiAgent) });
  }

  api<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        `${this.url}${path}`,
        {
          method,
          agent: apiAgent,
          headers: {
            authorization: `Bearer ${this.token}`,
            ...(payload !== undefined ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (text += d));
          res.on("end", () => {
            try {
              resolve({ status: res.statusCode ?? 0, body: (text === "" ? {} : JSON.parse(text)) as T });
            } catch (err) {
              reject(new Error(`${method} ${path}: ${res.statusCode} non-JSON body: ${text.slice(0, 200)}`, { cause: err }));
            }
          });
          res.on("error", reject);
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${path}: no answer in ${REQUEST_TIMEOUT_MS} ms`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  async expect<T = Record<string, unknown>>(status: number, method: string, path: string, body?: unknown): Promise<T> {
    const { status: got, body: answer } = await this.api<T>(method, path, body);
    if (got !== status) throw new Error(`${method} ${path}: expected ${status}, got ${got} ${JSON.stringify(answer)}`);
    return answer;
  }

  /**
   * Opens an SSE response and feeds every complete frame to `onFrame` with the
   * time its last chunk was handed to this process (performance.now(), ms).
   * Resolves once the response headers arrived: the Durable Object has then
   * registered the subscriber.
   */
  subscribe(path: string, onFrame: (frame: Frame, at: number) => void): Promise<Subscription> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        `${this.url}${path}`,
        { agent: sseAgent, headers: { authorization: `Bearer ${this.token}`, accept: "text/event-stream" } },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(new Error(`GET ${path}: ${res.statusCode}`));
            return;
          }
          res.setEncoding("utf8");
          let buffer = "";
          res.on("data", (chunk: string) => {
            // Taken first, before this chunk's parsing costs anything.
            const at = performance.now();
            buffer += chunk;
            let start = 0;
            for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n", start)) {
              onFrame(parseFrame(buffer.slice(start, end)), at);
              start = end + 2;
            }
            buffer = buffer.slice(start);
          });
          // close() destroys the socket, which the response reports as an error; that one is ours.
          res.on("error", () => {});
          resolve({ close: () => req.destroy() });
        },
      );
      // Before the response this is a failure; after it, reject is a no-op.
      req.on("error", reject);
    });
  }

  /** Reads a whole response as raw chunks, timed to the first byte and to the end. */
  readAll(path: string): Promise<{ text: string; firstByteMs: number; totalMs: number }> {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      let firstByteMs = NaN;
      const req = http.get(`${this.url}${path}`, { agent: sseAgent, headers: { authorization: `Bearer ${this.token}` } }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET ${path}: ${res.statusCode}`));
          return;
        }
        // Chunks are only kept here; parsing waits until the clock has stopped.
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => {
          if (chunks.length === 0) firstByteMs = performance.now() - started;
          chunks.push(chunk);
        });
        res.on("end", () => resolve({ text: Buffer.concat(chunks).toString("utf8"), firstByteMs, totalMs: performance.now() - started }));
        res.on("error", reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`GET ${path}: no end in ${REQUEST_TIMEOUT_MS} ms`)));
      req.on("error", reject);
    });
  }
}

function parseFrame(block: string): Frame {
  const frame: Frame = { id: 0, event: "message", data: "" };
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) frame.id = Number(line.slice(4));
    else if (line.startsWith("event: ")) frame.event = line.slice(7);
    else if (line.startsWith("data: ")) frame.data = line.slice(6);
  }
  return frame;
}

/** Waits until `done()` holds, re-checked whenever `notify` is called; bounded (DELIVERY_TIMEOUT_MS unless told). */
export class Waiter {
  #check: (() => void) | undefined;

  notify(): void {
    this.#check?.();
  }

  until(done: () => boolean, what: string, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#check = undefined;
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.#check = () => {
        if (!done()) return;
        clearTimeout(timer);
        this.#check = undefined;
        resolve();
      };
    });
  }
}

export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** `fetch` over node:http with an explicit agent, for the engine client (the bench's socket pool, not undici's). */
function nodeHttpFetch(agent: http.Agent): FetchLike {
  return (url, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const body = typeof init.body === "string" ? init.body : undefined;
      const headers: Record<string, string> = { ...(init.headers as Record<string, string> | undefined) };
      if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
      const req = http.request(url, { method: init.method ?? "GET", agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(", ") : value);
          }
          const payload = status === 204 || status === 304 ? null : Buffer.concat(chunks);
          resolve(new Response(payload, { status, headers: responseHeaders }));
        });
        res.on("error", reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () =>
        req.destroy(new Error(`${init.method ?? "GET"} ${url}: no answer in ${REQUEST_TIMEOUT_MS} ms`)),
      );
      init.signal?.addEventListener("abort", () => req.destroy(new Error("aborted")), { once: true });
      req.on("error", reject);
      req.end(body);
    });
}

export const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

export function tally(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

export const sortedCopy = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);

/** Destroys both socket pools (shutdown). */
export function destroyAgents(): void {
  apiAgent.destroy();
  sseAgent.destroy();
}
