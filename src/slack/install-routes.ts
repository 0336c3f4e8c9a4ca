// GET /slack/install and GET /slack/oauth_redirect (contract section 26): an
// admin, by console session or Cloudflare Access user (never a bearer token),
// is sent to Slack's authorize page with PKCE S256 and a single-use state
// (10 minutes, in D1 with the admin's principal) bound to the browser by the
// signed `slack_install` cookie (SameSite=Lax: a Strict cookie is not sent on
// Slack's cross-site redirect back). The redirect needs a live, unused state
// and that cookie, and any console cookie or Access assertion with it must be
// the same admin (else 403, the state left unused); only then is the code
// exchanged (oauth.v2.access, with the code_verifier, at SLACK_API_BASE_URL).
// A team or enterprise outside SLACK_ALLOWED_TEAMS is refused and its new
// token revoked at once (auth.revoke). Both routes answer HTML pages; a
// failure names its error code in the page and in X-Error-Code.
import { escapeHtml } from "slack-edge";
import { type OAuthV2AccessResponse, SlackAPIClient, SlackAPIConnectionError, SlackAPIError } from "slack-web-api-client";
import { queueRefusal } from "../audit/queue-refusal";
import { authenticate } from "../auth/authenticate";
import { readCookie } from "../auth/cookie-header";
import { grants } from "../auth/roles";
import { newSessionId, signSessionId, verifySessionCookie } from "../auth/session-cookie";
import { type HostConfig, loadConfig } from "../config/config";
import { type InstallSettings, installSettingsOf } from "./install-settings";
import type { Env } from "../config/env";
import { logger } from "../operate/logger";
import { openVerifier, sealVerifier } from "./installation-crypto";
import { digestOf, InstallationStore } from "./installation-store";
import {
  authorizeUrl,
  codeChallengeOf,
  INSTALL_COOKIE,
  installationOfAccess,
  installSetCookie,
  isAllowedInstallation,
  newCodeVerifier,
  redirectUriOf,
} from "./install-flow";
import { SLACK_LIBRARY_LOG_LEVEL } from "./library-logging";
import { withTimeout } from "./web-api";

/** oauth.v2.access and auth.revoke are abandoned after this long (Slack unreachable: 502). */
const OAUTH_CALL_TIMEOUT_MS = 10_000;

type Loaded = { settings: InstallSettings; config: HostConfig } | { failure: Response };

function loadInstallSettings(env: Env): Loaded {
  const loaded = loadConfig(env);
  if (loaded.state === "bad_config") return { failure: page(503, "bad_config", "The deployment's configuration is invalid.") };
  const settings = installSettingsOf(loaded.config);
  if (settings === null)
    return {
      failure: page(
        503,
        "not_configured",
        "Slack installations are off: set SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_INSTALL_KEY, SLACK_ALLOWED_TEAMS and PUBLIC_URL.",
      ),
    };
  return { settings, config: loaded.config };
}

export async function handleInstall(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const loaded = loadInstallSettings(env);
  if ("failure" in loaded) return loaded.failure;
  const { settings, config } = loaded;
  const auth = await authenticate(request.headers, { db: env.DB, config, waitUntil: (p) => ctx.waitUntil(p) });
  if (auth.kind !== "authenticated")
    return page(401, "unauthorized", "Sign in to the console (or through Cloudflare Access) as an admin, then open /slack/install.");
  const { principal } = auth;
  const kind = principal.credential.kind;
  if (kind !== "console_session" && kind !== "access_user") {
    await queueRefusal(env, principal.id, "GET /slack/install", "forbidden");
    return page(403, "forbidden", "An install is started by an admin in a browser (console session or Access), never by a bearer token.");
  }
  if (!grants(principal.roles, "admin")) {
    await queueRefusal(env, principal.id, "GET /slack/install", "forbidden");
    return page(403, "forbidden", `${principal.id} lacks the admin role.`);
  }
  const store = new InstallationStore(env.DB, settings.keys);
  const state = newSessionId();
  const verifier = newCodeVerifier();
  const digest = await digestOf(state);
  await store.putState(digest, principal.id, await sealVerifier(settings.keys, digest, verifier), Date.now());
  const location = authorizeUrl({
    oauthBaseUrl: settings.oauthBaseUrl,
    clientId: settings.clientId,
    publicUrl: settings.publicUrl,
    state,
    codeChallenge: await codeChallengeOf(verifier),
  });
  return new Response(null, {
    status: 302,
    headers: {
      location,
      "set-cookie": installSetCookie(await signSessionId(state, settings.clientSecret)),
      "cache-control": "no-store",
    },
  });
}

export async function handleOAuthRedirect(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const loaded = loadInstallSettings(env);
  if ("failure" in loaded) return loaded.failure;
  const { settings, config } = loaded;
  const query = new URL(request.url).searchParams;
  const state = query.get("state") ?? "";
  const badState = page(
    400,
    "bad_state",
    "This install link is unknown, used, older than 10 minutes or not this browser's; start again at /slack/install.",
  );
  const cookie = readCookie(request.headers.get("cookie"), INSTALL_COOKIE);
  const cookieState = cookie === null ? null : await verifySessionCookie(cookie, settings.clientSecret);
  if (state === "" || state.length > 512 || cookieState === null || cookieState !== state) return badState;
  const store = new InstallationStore(env.DB, settings.keys);
  const digest = await digestOf(state);
  const peeked = await store.peekState(digest, Date.now());
  if (peeked === null) return badState;
  // Whoever else the request proves (a console cookie, an Access assertion) must be the admin who started it.
  const auth = await authenticate(request.headers, { db: env.DB, config, waitUntil: (p) => ctx.waitUntil(p) });
  if (auth.kind === "refused" || (auth.kind === "authenticated" && auth.principal.id !== peeked.principal)) {
    if (auth.kind === "authenticated") await queueRefusal(env, auth.principal.id, "GET /slack/oauth_redirect", "forbidden");
    return page(403, "forbidden", "Finish the install signed in as the admin who started it.");
  }
  if (!(await store.takeState(digest, Date.now()))) return badState;
  const error = query.get("error");
  const code = query.get("code");
  if (error !== null || code === null || code === "" || code.length > 4_096) {
    return page(400, "authorization_failed", `Slack answered ${escapeHtml(error ?? "without a code")}; nothing was installed.`);
  }
  const verifier = await openVerifier(settings.keys, digest, peeked.code_verifier);
  if (verifier === null) return badState;

  const client = new SlackAPIClient(undefined, { baseUrl: settings.apiBaseUrl, retryHandlers: [], logLevel: SLACK_LIBRARY_LOG_LEVEL });
  let answer: OAuthV2AccessResponse;
  try {
    answer = await withTimeout("oauth.v2.access", OAUTH_CALL_TIMEOUT_MS, () =>
      client.oauth.v2.access({
        client_id: settings.clientId,
        client_secret: settings.clientSecret,
        code,
        redirect_uri: redirectUriOf(settings.publicUrl),
        code_verifier: verifier,
      } as Parameters<typeof client.oauth.v2.access>[0]),
    );
  } catch (err) {
    if (err instanceof SlackAPIError)
      return page(400, "authorization_failed", `Slack refused the code (${escapeHtml(err.error)}); nothing was installed.`);
    logger.warn("slack: oauth.v2.access failed", { error: err instanceof SlackAPIConnectionError ? `HTTP ${err.status}` : String(err) });
    return page(502, "slack_unavailable", "Slack could not be reached to finish the install; start again at /slack/install.");
  }
  const outcome = installationOfAccess(answer, peeked.principal, Date.now());
  if (outcome.kind !== "installation") return page(502, "slack_unavailable", `Slack's answer was unusable: ${outcome.message}.`);
  const installation = outcome.installation;
  if (!isAllowedInstallation(installation, settings.allowed)) {
    // The token Slack just made is revoked at once; nothing is stored.
    await withTimeout("auth.revoke", OAUTH_CALL_TIMEOUT_MS, () => client.auth.revoke({ token: installation.bot_token })).catch(
      (err: unknown) =>
        logger.error("slack: the token of a refused install could not be revoked", {
          installation: installation.installation_id,
          error: err instanceof Error ? err.name : String(err),
        }),
    );
    logger.warn("slack: an install into a team outside SLACK_ALLOWED_TEAMS was refused", { installation: installation.installation_id });
    return page(
      403,
      "team_not_allowed",
      `${escapeHtml(installation.installation_id)} is not in SLACK_ALLOWED_TEAMS; nothing was installed.`,
    );
  }
  await store.install(installation, Date.now());
  logger.info("slack: installed", { installation: installation.installation_id, by: peeked.principal });
  return page(200, null, `The app is installed in ${escapeHtml(installation.installation_id)}. You can close this tab.`);
}

function page(status: number, errorCode: string | null, message: string): Response {
  const title = errorCode === null ? "Installed" : `Not installed: ${errorCode}`;
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${message}</p></body></html>`;
  return new Response(html, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": "default-src 'none'",
      ...(errorCode === null ? {} : { "x-error-code": errorCode }),
    },
  });
}
