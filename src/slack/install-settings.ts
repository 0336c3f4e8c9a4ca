// Installation mode's settings (contract section 26), gathered once they are
// known to be whole (src/config/config.ts refuses a partial set): what the
// install routes, the listing, the request path and the runs' outbox read.
import { type HostConfig, isInstallationMode } from "../config/config";

/** Installation mode's settings, all present (config.ts refuses a partial set). */
export interface InstallSettings {
  clientId: string;
  clientSecret: string;
  keys: readonly string[];
  allowed: readonly string[];
  publicUrl: string;
  oauthBaseUrl: string;
  apiBaseUrl: string;
}

export function installSettingsOf(config: HostConfig): InstallSettings | null {
  if (!isInstallationMode(config)) return null;
  const { SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_INSTALL_KEY, SLACK_ALLOWED_TEAMS, PUBLIC_URL } = config;
  if (!SLACK_CLIENT_ID || !SLACK_CLIENT_SECRET || !SLACK_INSTALL_KEY || !SLACK_ALLOWED_TEAMS || !PUBLIC_URL) return null;
  return {
    clientId: SLACK_CLIENT_ID,
    clientSecret: SLACK_CLIENT_SECRET,
    keys: SLACK_INSTALL_KEY,
    allowed: SLACK_ALLOWED_TEAMS,
    publicUrl: PUBLIC_URL,
    oauthBaseUrl: config.SLACK_OAUTH_BASE_URL,
    apiBaseUrl: config.SLACK_API_BASE_URL,
  };
}
