// GET /api/slack/installations and DELETE /api/slack/installations/{id}
// (contract section 26, admin): the installations without their tokens, and
// an admin's uninstall: its tokens deleted (so its runs' posts stop),
// apps.uninstall called with its token, audited `slack.uninstall`.
import { z } from "zod";
import { SlackAPIClient } from "slack-web-api-client";
import { auditStatement, newAuditId } from "../../audit/audit-log";
import { apiError, jsonResponse } from "../../base/api-error";
import type { HostConfig } from "../../config/config";
import type { Env } from "../../config/env";
import { logger } from "../../operate/logger";
import { InstallationStore } from "../../slack/installation-store";
import { installSettingsOf } from "../../slack/install-settings";
import { SLACK_LIBRARY_LOG_LEVEL } from "../../slack/library-logging";
import { withTimeout } from "../../slack/web-api";

const APPS_UNINSTALL_TIMEOUT_MS = 10_000;

const installationSchema = z
  .object({
    installation_id: z.string(),
    team_id: z.string().optional(),
    enterprise_id: z.string().optional(),
    is_enterprise_install: z.boolean(),
    bot_user_id: z.string(),
    scopes: z.array(z.string()),
    installed_by: z.string(),
    authorized_by: z.string(),
    installed_at: z.string(),
    token_expires_at: z.string().optional(),
    status: z.enum(["active", "refresh_failed", "uninstalled"]),
  })
  .strict();
export const installationsListingSchema = z.object({ installations: z.array(installationSchema) }).strict();

function storeOf(env: Env, config: HostConfig): { store: InstallationStore; clientId: string; clientSecret: string; apiBaseUrl: string } {
  const settings = installSettingsOf(config);
  if (settings === null)
    throw apiError(404, {
      error: "not_found",
      message: "Slack installations are off (the app runs with one SLACK_BOT_TOKEN, or not at all).",
    });
  return {
    store: new InstallationStore(env.DB, settings.keys),
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    apiBaseUrl: settings.apiBaseUrl,
  };
}

export async function handleListInstallations(env: Env, config: HostConfig): Promise<Response> {
  if (installSettingsOf(config) === null) return jsonResponse(200, { installations: [] });
  return jsonResponse(200, { installations: await storeOf(env, config).store.list() });
}

export async function handleDeleteInstallation(env: Env, config: HostConfig, installationId: string, principal: string): Promise<Response> {
  const { store, clientId, clientSecret, apiBaseUrl } = storeOf(env, config);
  const served = await store.active(installationId);
  const known = await store.get(installationId);
  if (known === null) throw apiError(404, { error: "not_found", message: `No installation ${JSON.stringify(installationId)}.` });
  await store.uninstall(installationId, Date.now());
  if (served !== null) {
    const client = new SlackAPIClient(served.bot_token, { baseUrl: apiBaseUrl, retryHandlers: [], logLevel: SLACK_LIBRARY_LOG_LEVEL });
    await withTimeout("apps.uninstall", APPS_UNINSTALL_TIMEOUT_MS, () =>
      client.apps.uninstall({ client_id: clientId, client_secret: clientSecret }),
    ).catch((err: unknown) =>
      logger.warn("slack: apps.uninstall failed; the installation's tokens are deleted here anyway", {
        installation: installationId,
        error: err instanceof Error ? err.name : String(err),
      }),
    );
  }
  await auditStatement(env.DB, {
    id: newAuditId(),
    at: new Date().toISOString(),
    principal,
    action: "slack.uninstall",
    target: `slack installation ${installationId}`,
    result: "ok",
  }).run();
  return jsonResponse(200, { installations: [(await store.get(installationId)) ?? known] });
}
