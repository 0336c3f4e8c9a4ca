// The peer the stream is measured beside (issue 33): the Cloudflare Agents
// SDK (`agents` on npm), its `Agent` on hibernatable WebSockets and its
// `broadcast()`, in the bench Worker's own `wrangler dev` (bench-worker.ts
// routes /bench/peer/*). Each event is the same envelope and text as the
// engine's and the raw floor's, so all put the same bytes on the wire; the
// peer stores nothing, as a plain `broadcast()` does not. Bench only.
import { Agent, getAgentByName } from "agents";

/** What the peer's Worker side needs from the bench env. */
export interface PeerEnv {
  AGENTS_PEER: DurableObjectNamespace<AgentsPeer>;
}

export class AgentsPeer extends Agent<Cloudflare.Env> {
  #sequence = 0;

  /** No identity, state or MCP messages on connect: a subscriber gets the broadcasts only. */
  override shouldSendProtocolMessages(): boolean {
    return false;
  }

  /** `count` events, each one `broadcast()` of its JSON to every connected WebSocket. */
  async benchBroadcast(count: number, textBytes: number, label: string): Promise<{ appended: number; last_sequence: number }> {
    const text = label.length >= textBytes ? label : label + "x".repeat(textBytes - label.length);
    for (let i = 0; i < count; i++) {
      const sequence = ++this.#sequence;
      this.broadcast(
        JSON.stringify({
          protocol_version: "v2",
          sequence,
          run_id: this.name,
          channel_id: "api",
          type: "assistant_message",
          at: new Date().toISOString(),
          text,
        }),
      );
    }
    return { appended: count, last_sequence: this.#sequence };
  }

  async benchConnections(): Promise<number> {
    return [...this.getConnections()].length;
  }
}

/** The named peer (getAgentByName sets the Agent's name, as routeAgentRequest would). */
const peerStub = (env: PeerEnv, name: string) =>
  getAgentByName<Cloudflare.Env, AgentsPeer>(env.AGENTS_PEER as unknown as DurableObjectNamespace<AgentsPeer>, name);

const PEER_WS = /^\/bench\/peer\/([A-Za-z0-9_-]{1,64})\/ws$/;
const PEER_APPEND = /^\/bench\/peer\/([A-Za-z0-9_-]{1,64})\/append$/;
const PEER_STATS = /^\/bench\/peer\/([A-Za-z0-9_-]{1,64})\/stats$/;

/** The peer's routes, or undefined for any other path. `params`: the append's count, bytes and label, already checked. */
export async function peerRoute(
  request: Request,
  env: PeerEnv,
  path: string,
  params: () => { count: number; bytes: number; label: string } | string,
): Promise<Response | undefined> {
  let match: RegExpExecArray | null;
  if (request.method === "GET" && (match = PEER_WS.exec(path))) {
    const stub = await peerStub(env, match[1] ?? "");
    return stub.fetch(request);
  }
  if (request.method === "GET" && (match = PEER_STATS.exec(path))) {
    const stub = await peerStub(env, match[1] ?? "");
    return Response.json({ subscribers: await stub.benchConnections() });
  }
  if (request.method === "POST" && (match = PEER_APPEND.exec(path))) {
    const p = params();
    if (typeof p === "string") return Response.json({ error: "invalid_request", message: p }, { status: 400 });
    const stub = await peerStub(env, match[1] ?? "");
    return Response.json(await stub.benchBroadcast(p.count, p.bytes, p.label));
  }
  return undefined;
}
