// The run's durable Slack outbox (contract section 14), over a minimal SQL
// interface the run's Durable Object owns (its SQLite storage; tables
// prefixed `slack_`). Responsible for: turning each appended event into
// outbox items (event-posts.ts) in event order, without any network on the
// append path; delivering them one at a time, in order, through the Web API;
// retrying 429 (at least Retry-After), 5xx, network errors and lost answers
// with backoff until SLACK_DELIVERY_MAX_MS after the item was enqueued;
// giving up (and counting) on a permanent refusal or past that deadline,
// then going on with the items behind; keeping the ts of posts a later
// chat.update needs; the external-channel guard; stopping after uninstall.
// Two lanes: the run's own posts, in order, and the Home tab refresh
// (contract section 19), which may have to wait for
// SLACK_HOME_REPUBLISH_MS and so never holds a post back.
// It knows nothing about alarms: the object asks nextAttemptAt() and arms one.
import { channelPasses } from "./channel-checks";
import type { SlackAPIClient } from "slack-web-api-client";
import { DEFAULT_SLACK_RETRY_BASE_MS, DEFAULT_SLACK_RETRY_MAX_INTERVAL_MS } from "../config/config";
import { backoffMs } from "../schedule/deadline";
import type { SqlLike } from "../stream/event-log";
import { type ApproverPolicySource, slackApproversNamed, slackUsersNamed } from "./approver-mentions";
import { emptyMemory, type OutboxItem, type PostsMemory, postsForEvent, reminderDirects } from "./event-posts";
import { type CallFailure, classifyFailure, withTimeout } from "./web-api";
import type { SqlTable } from "../stream/sql-schema";
import type { RunEvent } from "../wire/event-schemas";

export type HomeRefresh = (client: SlackAPIClient, now: number) => Promise<number | null>;
/** What the outbox queues: a run's posts, and requests to publish the Home tabs again (contract section 19). */
type QueuedItem = OutboxItem | { kind: "home_refresh" };
const HOME_REFRESH_BODY = JSON.stringify({ kind: "home_refresh" } satisfies QueuedItem);

/** Where a Slack-started run posts. */
export interface SlackRunTarget {
  channel_id: string;
  thread_ts: string;
  /** The triggering message (the working-indicator reaction goes on it). */
  message_ts: string;
  /** Where approval messages link to the console (PUBLIC_URL, else the Slack request's origin); absent: no link. */
  console_origin?: string;
}

export interface OutboxSettings {
  SLACK_DELIVERY_MAX_MS: number;
  SLACK_ALLOW_EXTERNAL_CHANNELS: boolean;
  /** The approval policy (contract section 19): approval messages mention the Slack users it names. Absent: none. */
  TOOL_POLICY?: ApproverPolicySource["TOOL_POLICY"];
  APPROVER_GROUPS?: ApproverPolicySource["APPROVER_GROUPS"];
  /** The run's installation's team: an escalation mentions only its users (contract section 24). Absent: any team's. */
  installation_team?: string;
  /** The first retry's wait and the cap of the doubling waits (default RETRY_BASE_MS / RETRY_MAX_INTERVAL_MS). */
  SLACK_RETRY_BASE_MS?: number;
  SLACK_RETRY_MAX_INTERVAL_MS?: number;
}

/** First retry after this long, doubling per attempt, capped: a flapping Slack is retried briskly, a down one once a minute. */
const RETRY_BASE_MS = DEFAULT_SLACK_RETRY_BASE_MS;
const RETRY_MAX_INTERVAL_MS = DEFAULT_SLACK_RETRY_MAX_INTERVAL_MS;
/** One Web API call is abandoned after this long (treated as a lost answer, retried). */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000;

/** Why an item was given up (slack_outbox.error), besides Slack's own error codes. */
const GIVE_UP = {
  deadline: "delivery_deadline_passed",
  external: "external_channel",
  stopped: "app_uninstalled",
  noOriginal: "original_post_missing",
} as const;

type ItemState = "pending" | "sent" | "failed";

/**
 * What sending one item came to (a failed call throws instead): a post
 * Slack answered with its ts (kept for a later chat.update), another call
 * done, or an item given up without a call (its original post is missing).
 */
type SendResult = { kind: "posted"; ts: string } | { kind: "done" } | { kind: "given_up"; reason: (typeof GIVE_UP)["noOriginal"] };
type ChannelCheck = "unchecked" | "allowed" | "blocked";

interface ItemRow extends Record<string, SqlStorageValue> {
  id: number;
  body: string;
  attempts: number;
  enqueued_at: number;
  next_attempt_at: number;
}

export interface OutboxCounts {
  pending: number;
  failed: number;
}

/** What one delivery step did, for the caller's logs and tests. */
export type DeliveryStep =
  | { kind: "idle" }
  | { kind: "waiting"; until: number }
  /** The Home refresh published what it could and comes back `until` for users published to too recently (not a failure). */
  | { kind: "deferred"; id: number; until: number }
  | { kind: "sent"; id: number }
  | { kind: "retry"; id: number; at: number; failure: CallFailure }
  | { kind: "failed"; id: number; error: string };

/** The run's target and the posts' memory (one row, written by init()). */
export const SLACK_OUTBOX_RUN_TABLE: SqlTable = {
  name: "slack_outbox_run",
  ddl: [
    `CREATE TABLE IF NOT EXISTS slack_outbox_run (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      channel_id TEXT NOT NULL, thread_ts TEXT NOT NULL, message_ts TEXT NOT NULL,
      memory TEXT NOT NULL, channel_check TEXT NOT NULL DEFAULT 'unchecked')`,
  ],
};

export const SLACK_OUTBOX_TABLE: SqlTable = {
  name: "slack_outbox",
  ddl: [
    `CREATE TABLE IF NOT EXISTS slack_outbox (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      enqueued_at INTEGER NOT NULL,
      next_attempt_at INTEGER NOT NULL,
      post_key TEXT, ts TEXT, error TEXT)`,
    `CREATE INDEX IF NOT EXISTS slack_outbox_by_state ON slack_outbox (state, id)`,
  ],
};

export class SlackOutbox {
  readonly #sql: SqlLike;
  readonly #settings: OutboxSettings;
  readonly #callTimeoutMs: number;
  #draining: Promise<void> | null = null;

  /** Publishes the Home tabs again (src/slack/home-publish.ts): null when done, else when to try again. */
  readonly #homeRefresh: HomeRefresh | undefined;

  /** Hears the run's channel check's verdict (the Home tab keeps it: src/slack/channel-checks.ts). */
  readonly #channelChecked: ((channelId: string, allowed: boolean) => void) | undefined;

  constructor(
    sql: SqlLike,
    settings: OutboxSettings,
    callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS,
    homeRefresh?: HomeRefresh,
    channelChecked?: (channelId: string, allowed: boolean) => void,
  ) {
    this.#homeRefresh = homeRefresh;
    this.#channelChecked = channelChecked;
    this.#sql = sql;
    this.#settings = settings;
    this.#callTimeoutMs = callTimeoutMs;
  }

  /** Called once when a Slack-started run starts; a second call changes nothing. */
  init(target: SlackRunTarget): void {
    this.#sql.exec(
      `INSERT OR IGNORE INTO slack_outbox_run (id, channel_id, thread_ts, message_ts, memory) VALUES (1, ?, ?, ?, ?)`,
      target.channel_id,
      target.thread_ts,
      target.message_ts,
      JSON.stringify({ ...emptyMemory(), ...(target.console_origin === undefined ? {} : { console_origin: target.console_origin }) }),
    );
  }

  /** True once init() ran: only Slack-started runs have an outbox. */
  get active(): boolean {
    return this.#run() !== null;
  }

  /**
   * Adds the items of one appended event, in order. Pure storage work (no
   * network), so it is safe on the append path. Returns how many were added.
   */
  enqueueEvent(event: RunEvent, now: number): number {
    const run = this.#run();
    if (!run) return 0;
    const before = JSON.parse(run.memory) as PostsMemory;
    const policy = { TOOL_POLICY: this.#settings.TOOL_POLICY ?? {}, APPROVER_GROUPS: this.#settings.APPROVER_GROUPS ?? {} };
    const { items, memory } = postsForEvent(event, before, {
      approversOf: (tool) => slackApproversNamed(policy, tool),
      slackUsersNamed: (patterns) => slackUsersNamed(patterns, policy.APPROVER_GROUPS, this.#settings.installation_team),
    });
    // Heartbeats and other silent events hand the same memory back: no write on their append.
    if (memory !== before) this.#sql.exec(`UPDATE slack_outbox_run SET memory = ? WHERE id = 1`, JSON.stringify(memory));
    for (const item of items) this.#enqueue(item, now);
    return items.length;
  }

  /**
   * Contract section 24: the direct messages of one reminder, one per user, queued behind the
   * reminder's own update (in order, through the same retries). Storage only, like enqueueEvent.
   */
  enqueueReminders(
    reminded: { tool_name: string; approval_id?: string; input_id?: string },
    users: readonly string[],
    now: number,
  ): number {
    const run = this.#run();
    if (!run || users.length === 0) return 0;
    const memory = JSON.parse(run.memory) as PostsMemory;
    const items = reminderDirects(memory, reminded, users, run.channel_id, new Date(now).toISOString());
    for (const item of items) this.#enqueue(item, now);
    return items.length;
  }

  /**
   * Contract section 24: whether an approval's (or MCP question's) message is shown in Slack: the
   * run posts to Slack, its channel passed (or is not yet refused by) the external-channel rule, and
   * the message was not given up.
   */
  shows(item: { approval_id?: string; input_id?: string }): boolean {
    const run = this.#run();
    if (!run || run.channel_check === "blocked") return false;
    const key = item.approval_id !== undefined ? `approval:${item.approval_id}` : `input:${item.input_id ?? ""}`;
    const row = this.#sql
      .exec<{ state: string }>(`SELECT state FROM slack_outbox WHERE post_key = ? ORDER BY id DESC LIMIT 1`, key)
      .toArray()[0];
    return row !== undefined && row.state !== "failed";
  }

  /**
   * Asks for the Home tabs to be published again, in a lane of its own (a refresh waiting for
   * SLACK_HOME_REPUBLISH_MS holds no post back); one waiting request covers any number of
   * changes (it reads the listings when it is delivered).
   */
  enqueueHomeRefresh(now: number): void {
    if (!this.#run() || this.#homeRefresh === undefined) return;
    const waiting = this.#sql
      .exec<{ n: number }>(`SELECT COUNT(*) AS n FROM slack_outbox WHERE state = 'pending' AND body = ?`, HOME_REFRESH_BODY)
      .toArray()[0];
    if ((waiting?.n ?? 0) === 0) this.#enqueue({ kind: "home_refresh" }, now);
  }

  #enqueue(item: QueuedItem, now: number): void {
    const key = item.kind === "post" ? (item.key ?? null) : null;
    // A channel the guard blocked gets nothing, ever: the item is counted as given up at once.
    const blocked = this.#run()?.channel_check === "blocked";
    this.#sql.exec(
      `INSERT INTO slack_outbox (body, state, enqueued_at, next_attempt_at, post_key, error) VALUES (?, ?, ?, ?, ?, ?)`,
      JSON.stringify(item),
      blocked ? "failed" : "pending",
      now,
      now,
      key,
      blocked ? GIVE_UP.external : null,
    );
  }

  counts(): OutboxCounts {
    const rows = this.#sql
      .exec<{ state: string; n: number }>(`SELECT state, COUNT(*) AS n FROM slack_outbox WHERE state != 'sent' GROUP BY state`)
      .toArray();
    return { pending: rows.find((r) => r.state === "pending")?.n ?? 0, failed: rows.find((r) => r.state === "failed")?.n ?? 0 };
  }

  /** When the first lane's head is due (ms since epoch), or null when nothing waits: the object's alarm time. */
  nextAttemptAt(): number | null {
    const due = this.#heads().map((h) => h.next_attempt_at);
    return due.length === 0 ? null : Math.min(...due);
  }

  /**
   * Delivers due items, each lane in order, until the outbox is empty or
   * every lane's head must wait. One drain at a time per object: a second call joins the first.
   * `isStopped` is asked once per drain (the app was uninstalled or its
   * token revoked: everything pending is given up).
   */
  drain(client: SlackAPIClient, clock: () => number, isStopped: () => Promise<boolean>): Promise<void> {
    this.#draining ??= (async () => {
      try {
        if (this.#heads().length === 0) return;
        if (await isStopped()) {
          this.#failAllPending(GIVE_UP.stopped);
          return;
        }
        for (;;) {
          const step = await this.deliverNext(client, clock());
          if (step.kind !== "sent" && step.kind !== "failed" && step.kind !== "deferred") return;
        }
      } finally {
        this.#draining = null;
      }
    })();
    return this.#draining;
  }

  /**
   * One step: the first lane's head that is due (the run's posts before the Home refresh) is tried
   * once. Exposed for tests that drive the clock.
   */
  async deliverNext(client: SlackAPIClient, now: number): Promise<DeliveryStep> {
    const heads = this.#heads();
    if (heads.length === 0) return { kind: "idle" };
    const head = heads.find((h) => h.next_attempt_at <= now);
    if (!head) return { kind: "waiting", until: Math.min(...heads.map((h) => h.next_attempt_at)) };
    const run = this.#run();
    if (!run) return { kind: "idle" };
    const deadline = head.enqueued_at + this.#settings.SLACK_DELIVERY_MAX_MS;

    try {
      if (!this.#settings.SLACK_ALLOW_EXTERNAL_CHANNELS && run.channel_check !== "allowed") {
        const allowed = await this.#checkChannel(client, run.channel_id);
        this.#channelChecked?.(run.channel_id, allowed);
        if (!allowed) {
          this.#sql.exec(`UPDATE slack_outbox_run SET channel_check = 'blocked' WHERE id = 1`);
          this.#failAllPending(GIVE_UP.external);
          return { kind: "failed", id: head.id, error: GIVE_UP.external };
        }
        this.#sql.exec(`UPDATE slack_outbox_run SET channel_check = 'allowed' WHERE id = 1`);
      }
      const item = JSON.parse(head.body) as QueuedItem;
      if (item.kind === "home_refresh") {
        const again = (await this.#homeRefresh?.(client, now)) ?? null;
        if (again !== null && again <= deadline) {
          // Some user was published to too recently: come back when they may be again (not a failure).
          this.#sql.exec(`UPDATE slack_outbox SET next_attempt_at = ? WHERE id = ?`, again, head.id);
          return { kind: "deferred", id: head.id, until: again };
        }
        this.#sql.exec(`UPDATE slack_outbox SET state = 'sent', attempts = attempts + 1, error = NULL WHERE id = ?`, head.id);
        return { kind: "sent", id: head.id };
      }
      const sent = await this.#send(client, run, item);
      if (sent.kind === "given_up") return this.#fail(head.id, sent.reason);
      this.#sql.exec(
        `UPDATE slack_outbox SET state = 'sent', attempts = attempts + 1, ts = ?, error = NULL WHERE id = ?`,
        sent.kind === "posted" ? sent.ts : null,
        head.id,
      );
      return { kind: "sent", id: head.id };
    } catch (err) {
      const failure = classifyFailure(err);
      if (failure.kind === "permanent") return this.#fail(head.id, failure.detail);
      const attempts = head.attempts + 1;
      const base = this.#settings.SLACK_RETRY_BASE_MS ?? RETRY_BASE_MS;
      const cap = this.#settings.SLACK_RETRY_MAX_INTERVAL_MS ?? RETRY_MAX_INTERVAL_MS;
      const backoff = backoffMs({ baseMs: base, capMs: cap }, attempts - 1);
      // A 429 says exactly when to come back (Retry-After); growing a backoff on top of it would
      // give up on a merely busy Slack. Other failures back off exponentially.
      const wait = failure.kind === "rate_limited" ? failure.retry_after_ms : backoff;
      if (now >= deadline || (failure.kind === "rate_limited" && now + wait > deadline)) {
        return this.#fail(head.id, `${GIVE_UP.deadline}: ${failure.detail}`);
      }
      // The last try happens at the deadline, not after it.
      const at = Math.min(now + wait, deadline);
      this.#sql.exec(
        `UPDATE slack_outbox SET attempts = ?, next_attempt_at = ?, error = ? WHERE id = ?`,
        attempts,
        at,
        failure.detail,
        head.id,
      );
      return { kind: "retry", id: head.id, at, failure };
    }
  }

  /** Sends one item; a failed call throws (classified by the caller), an item that cannot be sent at all is given up. */
  async #send(client: SlackAPIClient, run: RunRow, item: OutboxItem): Promise<SendResult> {
    const bounded = <T>(name: string, call: () => Promise<T>) => withTimeout(name, this.#callTimeoutMs, call);
    switch (item.kind) {
      case "post": {
        const answer = await bounded("chat.postMessage", () =>
          client.chat.postMessage({
            channel: run.channel_id,
            thread_ts: run.thread_ts,
            text: item.message.text,
            blocks: item.message.blocks,
            // Contract section 20: no previews of links a model wrote; no link_names or parse either.
            unfurl_links: false,
            unfurl_media: false,
          }),
        );
        return answer.ts ? { kind: "posted", ts: answer.ts } : { kind: "done" };
      }
      case "update": {
        const original = this.#sql
          .exec<{ ts: string | null }>(
            `SELECT ts FROM slack_outbox WHERE post_key = ? AND state = 'sent' ORDER BY id DESC LIMIT 1`,
            item.ref,
          )
          .toArray()[0];
        if (!original?.ts) return { kind: "given_up", reason: GIVE_UP.noOriginal };
        const ts = original.ts;
        await bounded("chat.update", () =>
          client.chat.update({ channel: run.channel_id, ts, text: item.message.text, blocks: item.message.blocks ?? [] }),
        );
        return { kind: "done" };
      }
      case "direct": {
        // Contract section 24: the user's direct message with the app (im:write), then the post there.
        const opened = await bounded("conversations.open", () => client.conversations.open({ users: item.user }));
        const channel = opened.channel?.id;
        if (channel === undefined) throw new Error("conversations.open answered no channel");
        await bounded("chat.postMessage", () =>
          client.chat.postMessage({
            channel,
            text: item.message.text,
            blocks: item.message.blocks,
            unfurl_links: false,
            unfurl_media: false,
          }),
        );
        return { kind: "done" };
      }
      case "reaction":
        try {
          await bounded("reactions.add", () =>
            client.reactions.add({ channel: run.channel_id, timestamp: run.message_ts, name: item.name }),
          );
        } catch (err) {
          // The reaction is there already (a retry whose first answer was lost): done.
          if (classifyFailure(err).detail !== "already_reacted") throw err;
        }
        return { kind: "done" };
    }
  }

  /** conversations.info: false when shared with another organisation, or when it cannot be looked up. */
  async #checkChannel(client: SlackAPIClient, channelId: string): Promise<boolean> {
    try {
      const info = await withTimeout("conversations.info", this.#callTimeoutMs, () => client.conversations.info({ channel: channelId }));
      return channelPasses(info.channel);
    } catch (err) {
      // A temporary failure is retried like any call; a refusal means "cannot be looked up".
      if (classifyFailure(err).kind === "permanent") return false;
      throw err;
    }
  }

  #fail(id: number, error: string): DeliveryStep {
    this.#sql.exec(`UPDATE slack_outbox SET state = 'failed', attempts = attempts + 1, error = ? WHERE id = ?`, error, id);
    return { kind: "failed", id, error };
  }

  #failAllPending(error: string): void {
    this.#sql.exec(`UPDATE slack_outbox SET state = 'failed', error = ? WHERE state = 'pending'`, error);
  }

  /** The oldest pending item of each lane, the run's posts first: each lane is delivered in order, independently of the other. */
  #heads(): ItemRow[] {
    const head = (lane: "body <> ?" | "body = ?") =>
      this.#sql
        .exec<ItemRow>(
          `SELECT id, body, attempts, enqueued_at, next_attempt_at FROM slack_outbox WHERE state = 'pending' AND ${lane} ORDER BY id LIMIT 1`,
          HOME_REFRESH_BODY,
        )
        .toArray();
    return [...head("body <> ?"), ...head("body = ?")];
  }

  #run(): RunRow | null {
    return (
      this.#sql
        .exec<RunRow>(`SELECT channel_id, thread_ts, message_ts, memory, channel_check FROM slack_outbox_run WHERE id = 1`)
        .toArray()[0] ?? null
    );
  }

  /** Deletes the outbox with the run's events (retention): nothing is posted for a purged run. */
  purge(): void {
    this.#sql.exec(`DELETE FROM slack_outbox`);
    this.#sql.exec(`DELETE FROM slack_outbox_run`);
  }

  /** Every item with its state, in order: for tests and the operator's debugging. */
  items(): { id: number; state: ItemState; item: QueuedItem; ts: string | null; error: string | null }[] {
    return this.#sql
      .exec<{ id: number; state: string; body: string; ts: string | null; error: string | null }>(
        `SELECT id, state, body, ts, error FROM slack_outbox ORDER BY id`,
      )
      .toArray()
      .map((r) => ({ id: r.id, state: r.state as ItemState, item: JSON.parse(r.body) as QueuedItem, ts: r.ts, error: r.error }));
  }
}

interface RunRow extends Record<string, SqlStorageValue> {
  channel_id: string;
  thread_ts: string;
  message_ts: string;
  memory: string;
  channel_check: ChannelCheck;
}
