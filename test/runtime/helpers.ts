// Shared helpers of the in-runtime tests: the engine client (src/client) with
// SELF.fetch injected, raw authorised calls through SELF for the wire-level
// cases the client deliberately hides, and an SSE reader built on
// eventsource-parser for tests about frames and bytes.
import { env, SELF } from "cloudflare:test";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { RunObject } from "../../durable-objects/run-object";
import type { Role } from "../../src/auth/roles";
import { insertTokenStatement, newTokenValue } from "../../src/auth/token-store";
import { EngineClient } from "../../src/client";
import { createRunTables } from "../../src/agent/run-schema";

export const TOKEN = "runtime-test-token-0123456789abcdefghijklmnop";

/** The engine client against this Worker, in-process: every request goes through SELF.fetch. */
export const engine = new EngineClient({
  baseUrl: "https://engine.test",
  token: TOKEN,
  fetch: (input, init) => SELF.fetch(input, init),
});

/**
 * A client address of its own (documentation range), so the failed-authentication limit
 * (10 per address per minute, contract section 18) counts each test's failures apart.
 */
export function freshAddress(): string {
  return `2001:db8::${crypto
    .getRandomValues(new Uint16Array(3))
    .join(":")
    .replace(/\d+/g, (n) => Number(n).toString(16))}`;
}

export function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", freshAddress());
  if (!headers.has("authorization")) headers.set("authorization", `Bearer ${TOKEN}`);
  if (init.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json");
  return SELF.fetch(`https://engine.test${path}`, { ...init, headers });
}

export async function trigger(body: Record<string, unknown>, headers: HeadersInit = {}): Promise<{ status: number; json: any }> {
  const res = await api("/api/trigger", { method: "POST", body: JSON.stringify(body), headers });
  return { status: res.status, json: await res.json() };
}

export function runStub(runId: string): DurableObjectStub<RunObject> {
  return env.RUN_OBJECT.get(env.RUN_OBJECT.idFromName(runId));
}

/** Reads SSE frames from a response body as they arrive. */
export class SseReader {
  readonly events: EventSourceMessage[] = [];
  raw = "";
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #decoder = new TextDecoder();
  #parser = createParser({ onEvent: (e) => this.events.push(e) });
  done = false;

  constructor(response: Response) {
    if (!response.body) throw new Error("response has no body");
    this.#reader = response.body.getReader();
  }

  /** Reads until `count` events arrived in total (or the stream ended). */
  async readUntil(count: number): Promise<EventSourceMessage[]> {
    while (this.events.length < count && !this.done) await this.#readOnce();
    return this.events;
  }

  async readToEnd(): Promise<EventSourceMessage[]> {
    while (!this.done) await this.#readOnce();
    return this.events;
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel();
    this.done = true;
  }

  async #readOnce(): Promise<void> {
    const { done, value } = await this.#reader.read();
    if (done) {
      this.done = true;
      return;
    }
    const text = this.#decoder.decode(value, { stream: true });
    this.raw += text;
    this.#parser.feed(text);
  }
}

export async function openEvents(runId: string, query = "", headers: HeadersInit = {}): Promise<Response> {
  return api(`/api/runs/${runId}/events${query}`, { headers });
}

export const types = (events: EventSourceMessage[]) => events.map((e) => e.event);
export const sequences = (events: EventSourceMessage[]) => events.map((e) => Number(e.id));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A named token with these roles, written straight to D1 as the token store
 * writes it (the route that makes them has its own tests): its value and principal id.
 */
export async function namedToken(
  roles: readonly string[],
  prefix = "t",
  /** A person's own token (contract section 19: minted by that person for themselves); null: nobody's. */
  owner: string | null = null,
): Promise<{ name: string; token: string; principal: string }> {
  const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
  const token = newTokenValue();
  const now = Date.now();
  const record = {
    name,
    roles: roles as Role[],
    owner,
    owned_by_creator: owner !== null,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + 86_400_000).toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await (await insertTokenStatement(env.DB, record, token)).run();
  return { name, token, principal: `token:${name}` };
}

/** `api` with another bearer token. */
export function apiAs(token: string, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  return api(path, { ...init, headers });
}

/**
 * A run object's SQLite with the object's tables created (src/agent/run-schema.ts),
 * as a started run has them: for tests that drive one module over it directly.
 */
export function runTablesOf(state: DurableObjectState): SqlStorage {
  createRunTables(state.storage.sql);
  return state.storage.sql;
}
