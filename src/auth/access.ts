// Cloudflare Access (contract section 18): a request's Access assertion, the
// `Cf-Access-Jwt-Assertion` header Access adds on its way to the origin or,
// without it, the `CF_Authorization` cookie Access gives browsers (the same
// JWT), verified with jose against the team's JWKS at
// <ACCESS_TEAM_DOMAIN>/cdn-cgi/access/certs. jose's remote key set keeps the
// keys at most JWKS_CACHE_MAX_AGE_MS and, for a `kid` it does not know, fetches
// again at most once per JWKS_REFETCH_COOLDOWN_MS; RS256 only, `iss` the team
// domain, `aud` containing ACCESS_AUD, `exp`/`nbf` with CLOCK_LEEWAY_SECONDS.
// A user is `access:<email>` (lower-cased), a service token
// `access-service:<common_name>`; roles come from ACCESS_ROLES.
import { createRemoteJWKSet, jwtVerify } from "jose";
import { readCookie } from "./cookie-header";
import { grantsOf } from "./access-roles";
import type { AssertionSource, Principal } from "./principal";
import type { Role } from "./roles";

const JWKS_CACHE_MAX_AGE_MS = 600_000;
const JWKS_REFETCH_COOLDOWN_MS = 30_000;
const CLOCK_LEEWAY_SECONDS = 60;
const ACCESS_ASSERTION_HEADER = "cf-access-jwt-assertion";
const ACCESS_COOKIE = "CF_Authorization";

/** The request's Access assertion: the header when there is one (it decides alone), else the cookie; null for neither. */
export function accessAssertionOf(headers: Headers): { jwt: string; via: AssertionSource } | null {
  const header = headers.get(ACCESS_ASSERTION_HEADER);
  if (header !== null) return { jwt: header, via: "header" };
  const cookie = readCookie(headers.get("cookie"), ACCESS_COOKIE);
  return cookie !== null ? { jwt: cookie, via: "cookie" } : null;
}

export interface AccessSettings {
  ACCESS_TEAM_DOMAIN?: string | undefined;
  ACCESS_AUD?: string | undefined;
  ACCESS_ROLES: Record<string, Role[]>;
}

export type AccessVerdict = { ok: true; principal: Principal } | { ok: false; message: string };

/** One key set per team domain and isolate: its cache and cooldown are jose's. */
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

function keySetFor(teamDomain: string): ReturnType<typeof createRemoteJWKSet> {
  let set = keySets.get(teamDomain);
  if (!set) {
    set = createRemoteJWKSet(new URL(`${teamDomain}/cdn-cgi/access/certs`), {
      cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
      cooldownDuration: JWKS_REFETCH_COOLDOWN_MS,
    });
    keySets.set(teamDomain, set);
  }
  return set;
}

export function accessConfigured(
  settings: AccessSettings,
): settings is AccessSettings & { ACCESS_TEAM_DOMAIN: string; ACCESS_AUD: string } {
  return settings.ACCESS_TEAM_DOMAIN !== undefined && settings.ACCESS_AUD !== undefined;
}

export async function verifyAccessAssertion(assertion: string, settings: AccessSettings, via: AssertionSource): Promise<AccessVerdict> {
  if (!accessConfigured(settings)) return { ok: false, message: "Cloudflare Access is not configured here." };
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(assertion, keySetFor(settings.ACCESS_TEAM_DOMAIN), {
      algorithms: ["RS256"],
      issuer: settings.ACCESS_TEAM_DOMAIN,
      audience: settings.ACCESS_AUD,
      clockTolerance: CLOCK_LEEWAY_SECONDS,
    }));
  } catch (err) {
    const code = (err as { code?: string }).code ?? "ERR_JWT_INVALID";
    return { ok: false, message: `The Cloudflare Access assertion was refused (${code}); sign in through Access again.` };
  }
  const email = typeof payload.email === "string" && payload.email !== "" ? payload.email.toLowerCase() : undefined;
  const commonName = typeof payload.common_name === "string" && payload.common_name !== "" ? payload.common_name : undefined;
  if (email !== undefined) {
    const id = `access:${email}`;
    return {
      ok: true,
      principal: { id, roles: grantsOf(settings.ACCESS_ROLES, { kind: "user", email }), credential: { kind: "access_user", via } },
    };
  }
  if (commonName !== undefined) {
    const id = `access-service:${commonName}`;
    return {
      ok: true,
      principal: { id, roles: grantsOf(settings.ACCESS_ROLES, { kind: "service", id }), credential: { kind: "access_service", via } },
    };
  }
  return { ok: false, message: "The Cloudflare Access assertion names neither a user (email) nor a service token (common_name)." };
}
