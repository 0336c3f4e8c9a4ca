// Slack installations in D1 (contract section 26; migrations/0031): the
// installations with their sealed tokens, the single-use install states, and
// the refresh lease (one conditional UPDATE, so of refreshers racing for one
// installation exactly one refreshes; the new tokens and the lease's release
// are one statement). slack-edge ships only a KV installation store, whose
// eventual consistency could let two locations spend one refresh token; this
// is the D1 one. Tokens enter and leave sealed (installation-crypto.ts).
import { openToken, sealToken } from "./installation-crypto";

type InstallationStatus = "active" | "refresh_failed" | "uninstalled";

/** One installation as the listing shows it (contract section 26), never its tokens. */
export interface InstallationListing {
  installation_id: string;
  team_id?: string;
  enterprise_id?: string;
  is_enterprise_install: boolean;
  bot_user_id: string;
  scopes: string[];
  installed_by: string;
  authorized_by: string;
  installed_at: string;
  token_expires_at?: string;
  status: InstallationStatus;
}

/** What an install stores: the listing's fields with the plain tokens (sealed here). */
export interface NewInstallation extends Omit<InstallationListing, "status"> {
  bot_token: string;
  refresh_token?: string;
}

/** An installation a request or a run is served with: its bot token opened. */
export interface ServedInstallation {
  installation_id: string;
  team_id: string | null;
  enterprise_id: string | null;
  is_enterprise_install: boolean;
  bot_user_id: string;
  bot_token: string;
  token_expires_at: string | null;
  generation: number;
}

interface Row extends Record<string, unknown> {
  installation_id: string;
  team_id: string | null;
  enterprise_id: string | null;
  is_enterprise_install: number;
  bot_user_id: string;
  scopes: string;
  installed_by: string;
  authorized_by: string;
  installed_at: string;
  bot_token: string | null;
  refresh_token: string | null;
  token_expires_at: string | null;
  status: InstallationStatus;
  generation: number;
}

const INSTALL_STATE_MS = 10 * 60_000;

export async function digestOf(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export class InstallationStore {
  constructor(
    readonly db: D1Database,
    readonly keys: readonly string[],
  ) {}

  // ---- install states ------------------------------------------------------------

  async putState(stateDigest: string, principal: string, sealedVerifier: string, now: number): Promise<void> {
    await this.db.batch([
      this.db.prepare(`DELETE FROM slack_install_states WHERE expires_at <= ?`).bind(new Date(now).toISOString()),
      this.db
        .prepare(`INSERT INTO slack_install_states (state_digest, principal, code_verifier, expires_at) VALUES (?, ?, ?, ?)`)
        .bind(stateDigest, principal, sealedVerifier, new Date(now + INSTALL_STATE_MS).toISOString()),
    ]);
  }

  /** A live, unused state's admin and sealed verifier; null otherwise (nothing changes). */
  async peekState(stateDigest: string, now: number): Promise<{ principal: string; code_verifier: string } | null> {
    return this.db
      .prepare(`SELECT principal, code_verifier FROM slack_install_states WHERE state_digest = ? AND used_at IS NULL AND expires_at > ?`)
      .bind(stateDigest, new Date(now).toISOString())
      .first<{ principal: string; code_verifier: string }>();
  }

  /** Uses the state: true for exactly one caller while it is live and unused. */
  async takeState(stateDigest: string, now: number): Promise<boolean> {
    const iso = new Date(now).toISOString();
    const result = await this.db
      .prepare(`UPDATE slack_install_states SET used_at = ?2 WHERE state_digest = ?1 AND used_at IS NULL AND expires_at > ?2`)
      .bind(stateDigest, iso)
      .run();
    return result.meta.changes === 1;
  }

  // ---- installations -------------------------------------------------------------

  /** Stores an install (a reinstall replaces the row: new tokens, active, a new generation, no lease). */
  async install(installation: NewInstallation, now: number): Promise<void> {
    const id = installation.installation_id;
    const bot = await sealToken(this.keys, id, "bot", installation.bot_token);
    const refresh = installation.refresh_token === undefined ? null : await sealToken(this.keys, id, "refresh", installation.refresh_token);
    await this.db
      .prepare(
        `INSERT INTO slack_installations (installation_id, team_id, enterprise_id, is_enterprise_install, bot_user_id, scopes,
           installed_by, authorized_by, installed_at, bot_token, refresh_token, token_expires_at, status, generation, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'active', 1, ?13)
         ON CONFLICT (installation_id) DO UPDATE SET team_id = excluded.team_id, enterprise_id = excluded.enterprise_id,
           is_enterprise_install = excluded.is_enterprise_install, bot_user_id = excluded.bot_user_id, scopes = excluded.scopes,
           installed_by = excluded.installed_by, authorized_by = excluded.authorized_by, installed_at = excluded.installed_at,
           bot_token = excluded.bot_token, refresh_token = excluded.refresh_token, token_expires_at = excluded.token_expires_at,
           status = 'active', generation = slack_installations.generation + 1, refresh_lease_until = NULL,
           updated_at = excluded.updated_at`,
      )
      .bind(
        id,
        installation.team_id ?? null,
        installation.enterprise_id ?? null,
        installation.is_enterprise_install ? 1 : 0,
        installation.bot_user_id,
        JSON.stringify(installation.scopes),
        installation.installed_by,
        installation.authorized_by,
        installation.installed_at,
        bot,
        refresh,
        installation.token_expires_at ?? null,
        new Date(now).toISOString(),
      )
      .run();
  }

  /**
   * The active installation serving a request from `team` (a workspace) of `enterprise` (its Grid
   * organisation, if any): the workspace's own install wins over an org-wide one (contract section 26).
   */
  async forRequest(team: string | undefined, enterprise: string | undefined): Promise<ServedInstallation | null> {
    const row = await this.db
      .prepare(
        `SELECT * FROM slack_installations WHERE status = 'active' AND bot_token IS NOT NULL
           AND ((installation_id = ?1 AND is_enterprise_install = 0) OR (installation_id = ?2 AND is_enterprise_install = 1))
         ORDER BY is_enterprise_install ASC LIMIT 1`,
      )
      .bind(team ?? null, enterprise ?? null)
      .first<Row>();
    return row === null ? null : this.#served(row);
  }

  /** An installation by id while it is active (a run posts with it); null when uninstalled, failed or unknown. */
  async active(installationId: string): Promise<ServedInstallation | null> {
    const row = await this.db
      .prepare(`SELECT * FROM slack_installations WHERE installation_id = ? AND status = 'active' AND bot_token IS NOT NULL`)
      .bind(installationId)
      .first<Row>();
    return row === null ? null : this.#served(row);
  }

  async list(): Promise<InstallationListing[]> {
    const { results } = await this.db.prepare(`SELECT * FROM slack_installations ORDER BY installed_at, installation_id`).all<Row>();
    return results.map(listingOf);
  }

  async get(installationId: string): Promise<InstallationListing | null> {
    const row = await this.db.prepare(`SELECT * FROM slack_installations WHERE installation_id = ?`).bind(installationId).first<Row>();
    return row === null ? null : listingOf(row);
  }

  /** Deletes an installation's tokens (uninstalled, revoked, or DELETE): only its row. True when it had any. */
  async uninstall(installationId: string, now: number): Promise<boolean> {
    const result = await this.db
      .prepare(
        `UPDATE slack_installations SET bot_token = NULL, refresh_token = NULL, status = 'uninstalled', refresh_lease_until = NULL,
           generation = generation + 1, updated_at = ?2 WHERE installation_id = ?1 AND status != 'uninstalled'`,
      )
      .bind(installationId, new Date(now).toISOString())
      .run();
    return result.meta.changes === 1;
  }

  // ---- token rotation ------------------------------------------------------------

  /** The refresh token of an active installation at `generation`, opened; null otherwise. */
  async refreshTokenOf(installationId: string): Promise<{ refresh_token: string; generation: number } | null> {
    const row = await this.db
      .prepare(`SELECT refresh_token, generation FROM slack_installations WHERE installation_id = ? AND status = 'active'`)
      .bind(installationId)
      .first<{ refresh_token: string | null; generation: number }>();
    if (row?.refresh_token == null) return null;
    const token = await openToken(this.keys, installationId, "refresh", row.refresh_token);
    return token === null ? null : { refresh_token: token, generation: row.generation };
  }

  /** Takes the refresh lease of `generation` until `untilMs`: one conditional UPDATE, so one racer wins. */
  async takeRefreshLease(installationId: string, generation: number, now: number, untilMs: number): Promise<boolean> {
    const result = await this.db
      .prepare(
        `UPDATE slack_installations SET refresh_lease_until = ?3
          WHERE installation_id = ?1 AND generation = ?2 AND status = 'active'
            AND (refresh_lease_until IS NULL OR refresh_lease_until <= ?4)`,
      )
      .bind(installationId, generation, new Date(untilMs).toISOString(), new Date(now).toISOString())
      .run();
    return result.meta.changes === 1;
  }

  /** The refreshed tokens replace `generation`'s, and the lease is released, in one statement. */
  async writeRefreshed(
    installationId: string,
    generation: number,
    tokens: { bot_token: string; refresh_token: string; expires_at: string },
    now: number,
  ): Promise<boolean> {
    const bot = await sealToken(this.keys, installationId, "bot", tokens.bot_token);
    const refresh = await sealToken(this.keys, installationId, "refresh", tokens.refresh_token);
    const result = await this.db
      .prepare(
        `UPDATE slack_installations SET bot_token = ?3, refresh_token = ?4, token_expires_at = ?5, generation = generation + 1,
           refresh_lease_until = NULL, updated_at = ?6 WHERE installation_id = ?1 AND generation = ?2 AND status = 'active'`,
      )
      .bind(installationId, generation, bot, refresh, tokens.expires_at, new Date(now).toISOString())
      .run();
    return result.meta.changes === 1;
  }

  /** Slack refused the refresh token for good: refresh_failed until reinstalled (contract section 26). */
  async markRefreshFailed(installationId: string, generation: number, now: number): Promise<boolean> {
    const result = await this.db
      .prepare(
        `UPDATE slack_installations SET status = 'refresh_failed', refresh_lease_until = NULL, updated_at = ?3
          WHERE installation_id = ?1 AND generation = ?2 AND status = 'active'`,
      )
      .bind(installationId, generation, new Date(now).toISOString())
      .run();
    return result.meta.changes === 1;
  }

  async releaseRefreshLease(installationId: string, generation: number): Promise<void> {
    await this.db
      .prepare(`UPDATE slack_installations SET refresh_lease_until = NULL WHERE installation_id = ?1 AND generation = ?2`)
      .bind(installationId, generation)
      .run();
  }

  async #served(row: Row): Promise<ServedInstallation | null> {
    if (row.bot_token === null) return null;
    const token = await openToken(this.keys, row.installation_id, "bot", row.bot_token);
    if (token === null) return null;
    return {
      installation_id: row.installation_id,
      team_id: row.team_id,
      enterprise_id: row.enterprise_id,
      is_enterprise_install: row.is_enterprise_install === 1,
      bot_user_id: row.bot_user_id,
      bot_token: token,
      token_expires_at: row.token_expires_at,
      generation: row.generation,
    };
  }
}

function listingOf(row: Row): InstallationListing {
  return {
    installation_id: row.installation_id,
    ...(row.team_id === null ? {} : { team_id: row.team_id }),
    ...(row.enterprise_id === null ? {} : { enterprise_id: row.enterprise_id }),
    is_enterprise_install: row.is_enterprise_install === 1,
    bot_user_id: row.bot_user_id,
    scopes: JSON.parse(row.scopes) as string[],
    installed_by: row.installed_by,
    authorized_by: row.authorized_by,
    installed_at: row.installed_at,
    ...(row.token_expires_at === null ? {} : { token_expires_at: row.token_expires_at }),
    status: row.status,
  };
}
