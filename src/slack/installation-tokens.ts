// Token rotation of Slack installations (contract section 26): a bot token
// that expires within 2 hours is refreshed (oauth.v2.access with
// grant_type=refresh_token, at SLACK_API_BASE_URL, bounded at 30 s) under the
// installation's 60-second D1 lease, so one refresh at a time spends a refresh
// token, across isolates and run objects; the new tokens and the lease's
// release are one statement. Slack refusing the refresh token for good
// (invalid_refresh_token, invalid_grant, token_revoked) makes the
// installation refresh_failed until reinstalled (audited slack.refresh_failed);
// a refresh whose answer was lost is tried once more with the same refresh
// token; any other failure gives the lease back, and the next use tries again
// while the old token still works.
import { SlackAPIClient, SlackAPIError } from "slack-web-api-client";
import { auditStatement, newAuditId } from "../audit/audit-log";
import { logger } from "../operate/logger";
import type { InstallSettings } from "./install-settings";
import type { InstallationStore, ServedInstallation } from "./installation-store";
import { SLACK_LIBRARY_LOG_LEVEL } from "./library-logging";
import { withTimeout } from "./web-api";

const REFRESH_AHEAD_MS = 2 * 60 * 60_000;
const REFRESH_LEASE_MS = 60_000;
const REFRESH_CALL_TIMEOUT_MS = 30_000;
const REFUSED_FOR_GOOD = new Set(["invalid_refresh_token", "invalid_grant", "token_revoked"]);

/** Whether the installation's bot token is due for a refresh at `now` (no expiry: never). */
export function refreshDue(tokenExpiresAt: string | null, now: number): boolean {
  if (tokenExpiresAt === null) return false;
  const expires = Date.parse(tokenExpiresAt);
  return Number.isFinite(expires) && expires - now <= REFRESH_AHEAD_MS;
}

export type RefreshResult = "refreshed" | "leased_elsewhere" | "refresh_failed" | "not_refreshed" | "no_refresh_token";

/** One refresh attempt of `installationId`, under its lease. */
export async function refreshInstallation(
  store: InstallationStore,
  settings: Pick<InstallSettings, "clientId" | "clientSecret" | "apiBaseUrl">,
  installationId: string,
  now: number = Date.now(),
): Promise<RefreshResult> {
  const current = await store.refreshTokenOf(installationId);
  if (current === null) return "no_refresh_token";
  if (!(await store.takeRefreshLease(installationId, current.generation, now, now + REFRESH_LEASE_MS))) return "leased_elsewhere";
  const client = new SlackAPIClient(undefined, { baseUrl: settings.apiBaseUrl, retryHandlers: [], logLevel: SLACK_LIBRARY_LOG_LEVEL });
  const call = () =>
    withTimeout("oauth.v2.access", REFRESH_CALL_TIMEOUT_MS, () =>
      client.oauth.v2.access({
        client_id: settings.clientId,
        client_secret: settings.clientSecret,
        grant_type: "refresh_token",
        refresh_token: current.refresh_token,
      }),
    );
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    try {
      const answer = await call();
      const { access_token, refresh_token, expires_in } = answer;
      if (!access_token || !refresh_token || !expires_in) throw new Error("oauth.v2.access answered no rotated token set");
      await store.writeRefreshed(
        installationId,
        current.generation,
        { bot_token: access_token, refresh_token, expires_at: new Date(Date.now() + expires_in * 1000).toISOString() },
        Date.now(),
      );
      logger.info("slack: an installation's token was refreshed", { installation: installationId });
      return "refreshed";
    } catch (err) {
      if (err instanceof SlackAPIError && REFUSED_FOR_GOOD.has(err.error)) {
        if (await store.markRefreshFailed(installationId, current.generation, Date.now())) {
          await auditStatement(store.db, {
            id: newAuditId(),
            at: new Date().toISOString(),
            principal: "system",
            action: "slack.refresh_failed",
            target: `slack installation ${installationId}`,
            result: "ok",
            details: { error: err.error },
          }).run();
        }
        logger.error("slack: an installation's refresh token was refused; reinstall it", {
          installation: installationId,
          error: err.error,
        });
        return "refresh_failed";
      }
      // A refusal of another kind is not retried at once; a lost answer is, once, with the same refresh token.
      if (err instanceof SlackAPIError || attempt === 2) {
        await store.releaseRefreshLease(installationId, current.generation);
        logger.warn("slack: an installation's token refresh failed; the next use tries again", {
          installation: installationId,
          error: err instanceof SlackAPIError ? err.error : err instanceof Error ? err.name : String(err),
        });
        return "not_refreshed";
      }
    }
  }
  return "not_refreshed";
}

/**
 * The installation as it should be used now: refreshed first when its token is due (a run's
 * posts wait for it), else as read. Null when it no longer serves (uninstalled, refresh_failed).
 */
export async function usableInstallation(
  store: InstallationStore,
  settings: Pick<InstallSettings, "clientId" | "clientSecret" | "apiBaseUrl">,
  installationId: string,
): Promise<ServedInstallation | null> {
  const served = await store.active(installationId);
  if (served === null || !refreshDue(served.token_expires_at, Date.now())) return served;
  await refreshInstallation(store, settings, installationId);
  return store.active(installationId);
}
