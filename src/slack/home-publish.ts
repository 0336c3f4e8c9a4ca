// Publishing the Slack app's Home tab (contract section 19): reads the
// pending approvals and questions (human__ask's and MCP servers' mid-call) of
// Slack-started runs from the listings (D1), keeps those in channels that pass the external-channel rule (as
// learned once per channel, src/slack/channel-checks.ts), and
// publishes to each user what they may decide (src/slack/home-tab.ts).
// `app_home_opened` records the opener (migration 0017) and publishes at
// once; a run whose approvals or questions changed asks, through its outbox,
// for refreshHomes: every user who opened the tab in the last 7 days whose
// list changed is published again, at most once per SLACK_HOME_REPUBLISH_MS.
// Each opener is judged as their click would be: their person (users.info)
// is kept with the opener (migration 0020), the requester's with the run.
// Each publish names the active halts atop the tab (contract section 23).
import type { SlackAPIClient } from "slack-web-api-client";
import type { Person } from "../policy/persons";
import {
  type DecidableItem,
  type HomeApproval,
  type HomeFormQuestion,
  type HomeHalt,
  type HomeItem,
  type HomeQuestion,
  type HomeRules,
  type HomeViewer,
  decidableBy,
  homeDigest,
  homeView,
} from "./home-tab";
import { formFields } from "../client/requested-form";
import { slackPersonOf } from "./slack-persons";
import { emailTrustedTeams } from "../policy/persons";
import { withTimeout } from "./web-api";
import { channelVerdicts } from "./channel-checks";
import { HOME_OPENERS_WINDOW_MS } from "../operate/retention";

/** Pending items read per publish (the tab lists fewer; the rest are counted). */
const HOME_ITEMS_READ_MAX = 200;
/** Openers refreshed per run of refreshHomes. */
const HOME_OPENERS_MAX = 500;
const CALL_TIMEOUT_MS = 10_000;

export interface HomeSettings extends HomeRules {
  SLACK_ALLOW_EXTERNAL_CHANNELS: boolean;
  /** The least time between two publishes to one user (contract: 5 seconds). */
  SLACK_HOME_REPUBLISH_MS: number;
  /** Teams whose verified emails join an access: person (contract section 19); absent: the installation's team. */
  SLACK_EMAIL_TRUSTED_TEAMS?: readonly string[] | undefined;
  /** The console's origin for the tab's links; absent: no link. */
  console_origin?: string | undefined;
  /**
   * With Slack installations (contract section 26): the installation's team. Only its runs' items are shown,
   * and only its users' tabs are published (with its token); absent: the one workspace's, as before.
   */
  installation_team?: string | undefined;
}

/** The items of `team`'s runs only (its requesters are `slack:<team>:…`); every item without a team. */
function ofInstallation(items: HomeItem[], team: string | undefined): HomeItem[] {
  if (team === undefined) return items;
  return items.filter((item) => item.requested_by?.startsWith(`slack:${team}:`) === true);
}

interface ApprovalRow extends Record<string, unknown> {
  run_id: string;
  approval_id: string;
  channel_id: string;
  tool_name: string;
  level: "approve" | "confirm";
  arguments_json: string;
  expires_at: string;
  user_id: string;
  requested_by: string | null;
  requester_person: string | null;
  on_behalf_of: string | null;
  /** The votes so far as the listing keeps them (migration 0015): JSON `[{"by","at"}]`, NULL before any. */
  approvals_json: string | null;
}
interface QuestionRow extends Record<string, unknown> {
  run_id: string;
  tool_call_id: string;
  channel_id: string;
  question: string;
  expires_at: string;
  user_id: string;
  requested_by: string | null;
  /** An MCP question's (migration 0021); NULL for human__ask. */
  input_id: string | null;
  tool_name: string | null;
  requested_schema: string | null;
  requester_person: string | null;
  on_behalf_of: string | null;
}

/** A question row as the tab's item: a human__ask's, or an MCP server's (contract section 21) with its tool and form. */
function questionItem(r: QuestionRow): HomeQuestion | HomeFormQuestion | null {
  const who = { requester: r.user_id, requested_by: r.requested_by ?? undefined, expires_at: r.expires_at };
  if (r.input_id === null) {
    return { kind: "question", run_id: r.run_id, tool_call_id: r.tool_call_id, channel_id: r.channel_id, question: r.question, ...who };
  }
  // Without the tool that asked, nobody can be judged eligible: not listed (every row of the index names it).
  if (r.tool_name === null) return null;
  let schema: unknown = null;
  try {
    schema = r.requested_schema === null ? null : JSON.parse(r.requested_schema);
  } catch {
    schema = null;
  }
  return {
    kind: "form_question",
    run_id: r.run_id,
    tool_call_id: r.tool_call_id,
    input_id: r.input_id,
    tool_name: r.tool_name,
    channel_id: r.channel_id,
    question: r.question,
    answerable: formFields(schema) !== null,
    requester_person: r.requester_person ?? undefined,
    on_behalf_of: r.on_behalf_of ?? undefined,
    ...who,
  };
}

/** Who voted on an approval, from its listing row's JSON (none when it cannot be read). */
function votersOf(approvalsJson: string | null): string[] {
  if (approvalsJson === null) return [];
  try {
    const votes: unknown = JSON.parse(approvalsJson);
    return Array.isArray(votes) ? votes.flatMap((v) => (typeof v?.by === "string" ? [v.by as string] : [])) : [];
  } catch {
    return [];
  }
}

/** The pending, unexpired approvals and questions of Slack-started runs, oldest first. */
async function pendingItems(db: D1Database, now: number): Promise<HomeItem[]> {
  const at = new Date(now).toISOString();
  const [approvals, questions] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT a.run_id, a.approval_id, a.channel_id, a.tool_name, a.level, a.arguments_json, a.expires_at, a.approvals_json,
                r.user_id, r.requested_by, r.requester_person, r.on_behalf_of
         FROM approvals a JOIN runs r ON r.run_id = a.run_id
         WHERE a.status = 'pending' AND r.source = 'slack' AND a.expires_at > ? ORDER BY a.requested_at, a.approval_id LIMIT ?`,
      )
      .bind(at, HOME_ITEMS_READ_MAX),
    db
      .prepare(
        `SELECT i.run_id, i.tool_call_id, i.channel_id, i.question, i.expires_at, i.input_id, i.tool_name, i.requested_schema,
                r.user_id, r.requested_by, r.requester_person, r.on_behalf_of
         FROM inputs i JOIN runs r ON r.run_id = i.run_id
         WHERE i.status = 'pending' AND r.source = 'slack' AND i.expires_at > ? ORDER BY i.requested_at, i.run_id LIMIT ?`,
      )
      .bind(at, HOME_ITEMS_READ_MAX),
  ]);
  const a: HomeApproval[] = ((approvals?.results ?? []) as ApprovalRow[]).map((r) => ({
    kind: "approval",
    run_id: r.run_id,
    approval_id: r.approval_id,
    channel_id: r.channel_id,
    tool_name: r.tool_name,
    level: r.level,
    requester: r.user_id,
    requested_by: r.requested_by ?? undefined,
    requester_person: r.requester_person ?? undefined,
    on_behalf_of: r.on_behalf_of ?? undefined,
    arguments_json: r.arguments_json,
    expires_at: r.expires_at,
    voted_by: votersOf(r.approvals_json),
  }));
  const q = ((questions?.results ?? []) as QuestionRow[]).flatMap((r) => questionItem(r) ?? []);
  return [...a, ...q];
}

/**
 * The items in channels that pass the external-channel rule, each channel's verdict as kept
 * (src/slack/channel-checks.ts: the run's own check serves; one unknown is asked once). With a
 * lookup Slack rate-limited (or failed for now), `retryAt` says when to ask again; until then
 * the items of that channel are not known to pass.
 */
async function inAllowedChannels(
  db: D1Database,
  client: SlackAPIClient,
  items: HomeItem[],
  settings: HomeSettings,
  now: number,
): Promise<{ items: HomeItem[]; retryAt: number | null }> {
  if (settings.SLACK_ALLOW_EXTERNAL_CHANNELS) return { items, retryAt: null };
  const verdicts = await channelVerdicts(db, client, [...new Set(items.map((i) => i.channel_id))], now);
  return { items: items.filter((i) => verdicts.allowed.get(i.channel_id) === true), retryAt: verdicts.retryAt };
}

/** Records that `viewer` opened the tab (the 7-day window counts from here), with their person as just looked up. */
export async function recordHomeOpened(db: D1Database, viewer: HomeViewer, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO slack_home_openers (user_id, principal, team, opened_at, person) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET principal = excluded.principal, team = excluded.team, opened_at = excluded.opened_at,
         person = excluded.person`,
    )
    .bind(viewer.user, viewer.principal, viewer.team, new Date(now).toISOString(), viewer.person)
    .run();
}

/**
 * An opener's person: as kept when they opened the tab, else (the lookup failed then, or they opened it before
 * persons were kept) users.info now, kept when it answers; a failed lookup is nobody, as for a click.
 */
async function openerPerson(
  db: D1Database,
  client: SlackAPIClient,
  opener: OpenerRow,
  trustedTeams: readonly string[] | undefined,
): Promise<Person> {
  if (opener.person !== null) return opener.person;
  const person = await slackPersonOf(client, opener.principal, opener.user_id, emailTrustedTeams(trustedTeams, opener.team));
  if (person !== null) {
    await db.prepare(`UPDATE slack_home_openers SET person = ? WHERE user_id = ?`).bind(person, opener.user_id).run();
  }
  return person;
}

interface OpenerRow extends Record<string, unknown> {
  user_id: string;
  principal: string;
  team: string;
  person: string | null;
  published_at: number | null;
  published_digest: string | null;
}

/** Halts named atop the tab at most (the rest are in the console). */
const HOME_HALTS_MAX = 10;

/**
 * The active halts for the tab's top line (contract section 23), read with each publish: a tab
 * shows them from its next publish; none is published for a halt. A failed read names none.
 */
async function activeHomeHalts(db: D1Database): Promise<HomeHalt[]> {
  try {
    const { results } = await db
      .prepare(`SELECT halt_id, scope FROM halts WHERE status = 'active' ORDER BY engaged_at, halt_id LIMIT ?`)
      .bind(HOME_HALTS_MAX)
      .all<{ halt_id: string; scope: string }>();
    return results.map((r) => ({ halt_id: r.halt_id, scope: r.scope }));
  } catch {
    return [];
  }
}

async function publish(
  db: D1Database,
  client: SlackAPIClient,
  user: string,
  items: DecidableItem[],
  settings: HomeSettings,
  now: number,
  halts: readonly HomeHalt[],
) {
  await withTimeout("views.publish", CALL_TIMEOUT_MS, () =>
    client.views.publish({ user_id: user, view: homeView(items, settings.console_origin, halts) }),
  );
  await db
    .prepare(`UPDATE slack_home_openers SET published_at = ?, published_digest = ? WHERE user_id = ?`)
    .bind(now, homeDigest(items), user)
    .run();
}

/** The tab of one user who just opened it, published at once. */
export async function publishHomeNow(
  db: D1Database,
  client: SlackAPIClient,
  viewer: HomeViewer,
  settings: HomeSettings,
  now: number,
): Promise<void> {
  const pending = ofInstallation(await pendingItems(db, now), settings.installation_team);
  const { items, retryAt } = await inAllowedChannels(db, client, pending, settings, now);
  // A channel not known yet (its lookup rate-limited): the tab as last published stays, hiding nothing it showed;
  // the next refresh publishes it whole.
  if (retryAt !== null) return;
  await publish(db, client, viewer.user, decidableBy(viewer, items, settings), settings, now, await activeHomeHalts(db));
}

/**
 * Publishes again to every recent opener whose list changed. Returns null when done, or when to
 * come back for the users published to too recently (the outbox retries the item then).
 */
export async function refreshHomes(db: D1Database, client: SlackAPIClient, settings: HomeSettings, now: number): Promise<number | null> {
  const since = new Date(now - HOME_OPENERS_WINDOW_MS).toISOString();
  const openers = await db
    .prepare(
      `SELECT user_id, principal, team, person, published_at, published_digest FROM slack_home_openers
       WHERE opened_at >= ? ORDER BY opened_at DESC LIMIT ?`,
    )
    .bind(since, HOME_OPENERS_MAX)
    .all<OpenerRow>();
  const team = settings.installation_team;
  const mineOnly = openers.results.filter((opener) => team === undefined || opener.team === team);
  if (mineOnly.length === 0) return null;
  const pending = ofInstallation(await pendingItems(db, now), team);
  const allowed = await inAllowedChannels(db, client, pending, settings, now);
  // A channel not known yet (its lookup rate-limited): nobody's tab changes until it is, so no item shown is hidden.
  if (allowed.retryAt !== null) return allowed.retryAt;
  const items = allowed.items;
  const halts = await activeHomeHalts(db);
  let retryAt: number | null = null;
  for (const opener of mineOnly) {
    const person = await openerPerson(db, client, opener, settings.SLACK_EMAIL_TRUSTED_TEAMS);
    const mine = decidableBy({ user: opener.user_id, principal: opener.principal, team: opener.team, person }, items, settings);
    if (homeDigest(mine) === opener.published_digest) continue;
    const due = (opener.published_at ?? 0) + settings.SLACK_HOME_REPUBLISH_MS;
    if (due > now) {
      retryAt = retryAt === null ? due : Math.min(retryAt, due);
      continue;
    }
    await publish(db, client, opener.user_id, mine, settings, now, halts);
  }
  return retryAt;
}
