// The pure parts of installing the Slack app (contract section 26): the
// authorize URL with PKCE S256, what an `oauth.v2.access` answer becomes
// (through slack-edge's toInstallation), the SLACK_ALLOWED_TEAMS rule, and
// which installation an event or click belongs to. No network, no storage.
import { toInstallation } from "slack-edge";
import type { OAuthV2AccessResponse } from "slack-web-api-client";
import type { NewInstallation } from "./installation-store";
import { slackPrincipal } from "./slack-principal";

/** The bot scopes the app asks for: slack/manifest.yaml's `oauth_config.scopes.bot`, in its order. */
const SLACK_BOT_SCOPES = [
  "app_mentions:read",
  "chat:write",
  "im:history",
  "im:read",
  // Contract section 24: conversations.open for a reminder's direct messages.
  "im:write",
  "reactions:write",
  "channels:read",
  "groups:read",
  "mpim:read",
  "users:read",
  "users:read.email",
] as const;

/** The install cookie (contract section 26): sent back only on the redirect to /slack/oauth_redirect. */
export const INSTALL_COOKIE = "slack_install";
const INSTALL_STATE_SECONDS = 600;

export function installSetCookie(signedState: string): string {
  return `${INSTALL_COOKIE}=${signedState}; HttpOnly; Secure; SameSite=Lax; Path=/slack/oauth_redirect; Max-Age=${INSTALL_STATE_SECONDS}`;
}

function base64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A fresh PKCE code verifier (RFC 7636: 43 characters of base64url, 256 random bits). */
export function newCodeVerifier(): string {
  return base64Url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The S256 challenge of a verifier: base64url(SHA-256(verifier)). */
export async function codeChallengeOf(verifier: string): Promise<string> {
  return base64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

export function redirectUriOf(publicUrl: string): string {
  return `${publicUrl}/slack/oauth_redirect`;
}

/** `<SLACK_OAUTH_BASE_URL>oauth/v2/authorize` with the manifest's scopes, the redirect URI, the state and PKCE S256. */
export function authorizeUrl(settings: {
  oauthBaseUrl: string;
  clientId: string;
  publicUrl: string;
  state: string;
  codeChallenge: string;
}): string {
  const url = new URL("oauth/v2/authorize", settings.oauthBaseUrl);
  url.searchParams.set("client_id", settings.clientId);
  url.searchParams.set("scope", SLACK_BOT_SCOPES.join(","));
  url.searchParams.set("redirect_uri", redirectUriOf(settings.publicUrl));
  url.searchParams.set("state", settings.state);
  url.searchParams.set("code_challenge", settings.codeChallenge);
  url.searchParams.set("code_challenge_method", "S256");
  return url.toString();
}

/** What an oauth.v2.access answer came to: an installation to store, or why not. */
export type AccessOutcome = { kind: "installation"; installation: NewInstallation } | { kind: "malformed"; message: string };

const TEAM_ID = /^[TE][A-Z0-9]{1,30}$/;
const USER_ID = /^[UW][A-Z0-9]{1,30}$/;

/** An oauth.v2.access answer (an install's) as the installation to store; its id is the enterprise's when org-wide. */
export function installationOfAccess(answer: OAuthV2AccessResponse, installedBy: string, now: number): AccessOutcome {
  const installed = toInstallation(answer);
  const enterprise = installed.enterprise_id ?? undefined;
  const team = installed.team_id ?? undefined;
  const orgWide = installed.is_enterprise_install === true;
  const id = orgWide ? enterprise : team;
  if (id === undefined || !TEAM_ID.test(id)) return { kind: "malformed", message: "oauth.v2.access named no team or enterprise" };
  if (enterprise !== undefined && !TEAM_ID.test(enterprise)) return { kind: "malformed", message: "a malformed enterprise id" };
  if (installed.bot_token === undefined || installed.bot_user_id === undefined || !USER_ID.test(installed.bot_user_id))
    return { kind: "malformed", message: "oauth.v2.access answered no bot token or bot user" };
  const user = installed.user_id;
  if (user === undefined || !USER_ID.test(user)) return { kind: "malformed", message: "oauth.v2.access named no authorizing user" };
  const expiresAt =
    installed.bot_token_expires_at === undefined ? undefined : new Date(installed.bot_token_expires_at * 1000).toISOString();
  return {
    kind: "installation",
    installation: {
      installation_id: id,
      ...(team === undefined ? {} : { team_id: team }),
      ...(enterprise === undefined ? {} : { enterprise_id: enterprise }),
      is_enterprise_install: orgWide,
      bot_user_id: installed.bot_user_id,
      scopes: installed.bot_scopes ?? [],
      installed_by: installedBy,
      // Contract section 18: a Slack user's principal names the enterprise on Grid, else the workspace.
      authorized_by: slackPrincipal(enterprise ?? team ?? id, user),
      installed_at: new Date(now).toISOString(),
      bot_token: installed.bot_token,
      ...(installed.bot_refresh_token === undefined ? {} : { refresh_token: installed.bot_refresh_token }),
      ...(expiresAt === undefined ? {} : { token_expires_at: expiresAt }),
    },
  };
}

/** SLACK_ALLOWED_TEAMS (contract section 26): an org-wide install needs its enterprise listed; a workspace its team or enterprise. */
export function isAllowedInstallation(
  installation: Pick<NewInstallation, "team_id" | "enterprise_id" | "is_enterprise_install">,
  allowed: readonly string[],
): boolean {
  if (installation.is_enterprise_install) return installation.enterprise_id !== undefined && allowed.includes(installation.enterprise_id);
  return (
    (installation.team_id !== undefined && allowed.includes(installation.team_id)) ||
    (installation.enterprise_id !== undefined && allowed.includes(installation.enterprise_id))
  );
}

/** The workspace and organisation a request came from, to find its installation. */
export interface RequestOrigin {
  team: string | undefined;
  enterprise: string | undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * An Events API envelope's installation (contract section 26): `authorizations[0]`'s enterprise
 * when `is_enterprise_install`, else its team (the envelope's team_id / enterprise_id as fallback).
 */
export function eventOrigin(body: unknown): RequestOrigin {
  const b = (body ?? {}) as { team_id?: unknown; enterprise_id?: unknown; authorizations?: unknown };
  const first = Array.isArray(b.authorizations) ? (b.authorizations[0] as Record<string, unknown> | undefined) : undefined;
  if (first && typeof first === "object") {
    const enterprise = text(first.enterprise_id) ?? text(b.enterprise_id);
    if (first.is_enterprise_install === true) return { team: undefined, enterprise };
    return { team: text(first.team_id) ?? text(b.team_id), enterprise };
  }
  return { team: text(b.team_id), enterprise: text(b.enterprise_id) };
}

/** A click's or submission's installation: its `team.id`, or `enterprise.id` for an org-wide install. */
export function interactionOrigin(body: unknown): RequestOrigin {
  const b = (body ?? {}) as {
    team?: { id?: unknown; enterprise_id?: unknown } | null;
    enterprise?: { id?: unknown } | null;
    is_enterprise_install?: unknown;
  };
  const enterprise = text(b.enterprise?.id) ?? text(b.team?.enterprise_id);
  if (b.is_enterprise_install === true) return { team: undefined, enterprise };
  return { team: text(b.team?.id), enterprise };
}
