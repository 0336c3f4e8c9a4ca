// The Policy page's two reads the typed client does not model yet (contract
// section 24): the shadow version's differences (GET /api/policy/shadow) and
// replay of a candidate (POST /api/policy/replay), over the same cookie
// fetch, in the contract's shapes. A server that lacks the route answers 404
// `not_found`; `absent` says so, and the page tells the person plainly.
import { errorFromResponse } from "../../client/errors";
import { engine, errorCode, errorStatus } from "./api";

/** One call where the shadow version's verdict differs from the active one's. */
interface ShadowDifference {
  at: string;
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  check: string;
  active: string;
  shadow: string;
}

export interface ShadowPage {
  differences: ShadowDifference[];
  next_cursor: string | null;
}

export interface ReplayRequest {
  policy: unknown;
  since: string;
  until?: string;
  cursor?: string;
}

/** One recorded call the candidate judges otherwise. */
export interface ReplayChange {
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  check: string;
  recorded: string;
  candidate: string;
  principal?: string;
}

export interface ReplayPage {
  examined: number;
  skipped: number;
  changed: ReplayChange[];
  next_cursor: string | null;
}

async function json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const response = await engine.raw(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw await errorFromResponse(response, `${method} ${path}`);
  return (await response.json()) as T;
}

/** Whether a refusal says this server has no such route (yet): 404 `not_found`. */
export function absent(err: unknown): boolean {
  return errorStatus(err) === 404 && (errorCode(err) === "not_found" || errorCode(err) === "http_404");
}

/** GET /api/policy/shadow?version=&limit=&cursor= */
export function shadowDifferences(query: { version?: number; limit?: number; cursor?: string }, signal?: AbortSignal): Promise<ShadowPage> {
  const params = new URLSearchParams();
  if (query.version !== undefined) params.set("version", String(query.version));
  if (query.limit !== undefined) params.set("limit", String(query.limit));
  if (query.cursor !== undefined) params.set("cursor", query.cursor);
  const q = params.toString();
  return json("GET", `/api/policy/shadow${q === "" ? "" : `?${q}`}`, undefined, signal);
}

/** POST /api/policy/replay (admin). */
export function replayPolicy(body: ReplayRequest): Promise<ReplayPage> {
  return json("POST", "/api/policy/replay", body);
}
