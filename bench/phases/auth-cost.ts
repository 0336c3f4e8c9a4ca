// Phase 13, authentication's cost per request (issue 18, contract section
// 18): the bench Worker's /bench/auth/check runs the real authenticate() on
// the request's credential, /bench/auth/bare does the same work without it
// (bench/bench-worker.ts), so the difference between them is what
// authentication adds to every /api request. Credentials: API_TOKEN
// (token:root: a named-token lookup in D1 that misses, then the constant-time
// compare), a named token (the D1 lookup that hits; last_used_at written at
// most once a minute), and a Cloudflare Access assertion (jose RS256 against
// a JWKS stand-in on loopback, test/support/jwks-server.ts, warm: fetched
// once, then cached). GET /healthz, the real Worker's route without a
// credential, is shown beside them. One request at a time, the kinds taken in
// turn in one loop so every kind sees the same machine; on the runtime's own
// socket when found (no dev proxy hop), else through wrangler dev's port.
import { readFileSync } from "node:fs";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { startJwksServer } from "../../test/support/jwks-server";
import { log, percentile, sortedCopy } from "../http-client";
import { withServer } from "../servers";
import { AUTH_REQUESTS, AUTH_WARMUP_REQUESTS } from "../settings";

const AUD = "bench-access-aud";
const EMAIL = "bench@example.com";

interface Kind {
  label: string;
  path: string;
  headers: Record<string, string>;
}

interface KindFigures {
  label: string;
  p50Ms: number;
  p99Ms: number;
}

export interface AuthCost {
  path: string;
  requests: number;
  bare: KindFigures;
  kinds: KindFigures[];
  /** JWKS fetches over the whole phase: 1 when the cache stayed warm. */
  jwksFetches: number;
  /** The 1-minute load average after the phase: how busy the shared machine was. */
  load: string;
}

async function timed(url: string, headers: Record<string, string>): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  const ms = performance.now() - started;
  if (res.status !== 204 && res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return ms;
}

export async function authCostPhase(): Promise<AuthCost> {
  const jwks = await startJwksServer();
  try {
    const pair = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "bench-key", alg: "RS256", use: "sig" };
    await fetch(`${jwks.url}/_control/keys`, { method: "POST", body: JSON.stringify({ keys: [jwk] }) });
    const vars = { ACCESS_TEAM_DOMAIN: jwks.url, ACCESS_AUD: AUD, ACCESS_ROLES: JSON.stringify({ [EMAIL]: ["viewer"] }) };
    return await withServer(async (server, client, direct) => {
      const base = (direct ?? client).url;
      const made = await fetch(`${server.url}/api/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "bench-viewer", roles: ["viewer"] }),
      });
      if (made.status !== 201) throw new Error(`POST /api/tokens: ${made.status} ${await made.text()}`);
      const named = ((await made.json()) as { token: string }).token;
      const now = Math.floor(Date.now() / 1_000);
      // One assertion for the phase (valid 10 minutes): each request still verifies its signature.
      const assertion = await new SignJWT({ email: EMAIL })
        .setProtectedHeader({ alg: "RS256", kid: "bench-key" })
        .setIssuer(jwks.url)
        .setAudience([AUD])
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(pair.privateKey);
      const bare: Kind = { label: "bare (no authenticate())", path: "/bench/auth/bare", headers: {} };
      const kinds: Kind[] = [
        { label: "API_TOKEN (token:root)", path: "/bench/auth/check", headers: { authorization: `Bearer ${server.token}` } },
        { label: "named token (D1 lookup)", path: "/bench/auth/check", headers: { authorization: `Bearer ${named}` } },
        { label: "Access JWT (warm JWKS)", path: "/bench/auth/check", headers: { "cf-access-jwt-assertion": assertion } },
        { label: "GET /healthz (real route)", path: "/healthz", headers: {} },
      ];
      const all = [bare, ...kinds];
      log(
        `13. auth cost: ${AUTH_REQUESTS} requests per kind (${all.length} kinds, in turn) on ${direct ? "the runtime's socket" : "wrangler dev"}`,
      );
      for (let i = 0; i < AUTH_WARMUP_REQUESTS; i++) for (const k of all) await timed(`${base}${k.path}`, k.headers);
      const times = new Map<Kind, number[]>(all.map((k) => [k, []]));
      for (let i = 0; i < AUTH_REQUESTS; i++) for (const k of all) times.get(k)?.push(await timed(`${base}${k.path}`, k.headers));
      const figures = (k: Kind): KindFigures => {
        const sorted = sortedCopy(times.get(k) ?? []);
        return { label: k.label, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
      };
      const jwksFetches = ((await (await fetch(`${jwks.url}/_control/fetches`)).json()) as { fetches: number }).fetches;
      return {
        path: direct ? "direct" : "wrangler dev",
        requests: AUTH_REQUESTS,
        bare: figures(bare),
        kinds: kinds.map(figures),
        jwksFetches,
        load: readFileSync("/proc/loadavg", "utf8").split(" ")[0] ?? "?",
      };
    }, vars);
  } finally {
    await jwks.stop();
  }
}

/** The phase's lines for the report: each kind's p50/p99 and what it adds over the bare route. */
export function authCostReport(cost: AuthCost): string {
  const ms = (n: number) => `${n.toFixed(2)} ms`;
  const signed = (n: number) => `${n >= 0 ? "+" : ""}${n.toFixed(2)} ms`;
  const line = (f: KindFigures, added: boolean) =>
    `  ${f.label.padEnd(28)} p50 ${ms(f.p50Ms).padStart(9)}  p99 ${ms(f.p99Ms).padStart(9)}` +
    (added ? `   added: p50 ${signed(f.p50Ms - cost.bare.p50Ms)}, p99 ${signed(f.p99Ms - cost.bare.p99Ms)}` : "");
  return [
    "",
    `Authentication per request (issue 18; ${cost.requests} requests per kind, one at a time, ${cost.path}; load ${cost.load}; no goal set)`,
    line(cost.bare, false),
    ...cost.kinds.map((k) => line(k, k.label !== "GET /healthz (real route)")),
    `  JWKS fetches over the phase: ${cost.jwksFetches} (1 = the cache stayed warm)`,
    "",
  ].join("\n");
}
