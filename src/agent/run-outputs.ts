// What a run sends beyond its own stream, written off the append path: the
// D1 run index of contract section 15 (a durable mark per appended event that
// changes a listing, flushed to D1 by the object's alarm) and, for runs
// started from Slack, the Slack outbox of contract section 14 (posts enqueued
// on each append, delivered in the background and retried by the alarm).
// The engine calls `appended` synchronously after every stored event; this
// module does storage work only there, and every network step (D1 flush,
// Slack delivery) runs outside the run's path (waitUntil and the alarm). An
// "index" or "slack" deadline is armed before each network step, so work cut
// off by an eviction is picked up by the alarm: nothing waits on a promise
// that might never settle.
import type { SlackAPIClient } from "slack-web-api-client";
import type { HostConfig } from "../config/config";
import { redactText } from "../execution/redaction";
import type { AuditEntry } from "../audit/audit-log";
import { auditOfEvent } from "../audit/run-audit";
import { FLUSH_RETRY_AFTER_FAILURE_MS, type IndexDb, nextFlushDelayMs, RunIndex, type RunIndexContext } from "../listings/run-index";
import type { AlarmSchedule } from "../schedule/alarm-schedule";
import { DEFAULT_CALL_TIMEOUT_MS, SlackOutbox } from "../slack/outbox";
import { isPostingStopped } from "../slack/stop-posting";
import { createSlackClient } from "../slack/web-api";
import type { SqlLike } from "../stream/event-log";
import { isTerminalEventType, type StoredEvent } from "../stream/events";
import type { EngineObserver } from "./run-engine";
import type { RunRecord, RunSummary } from "./run-record";

/** Marks of one agent step are written together: the flush runs this long after the first of them. */
export const INDEX_FLUSH_DELAY_MS = 50;
/** A drain cut off (eviction) is retried by the alarm after one call's bound plus this margin. */
const DRAIN_WATCHDOG_MARGIN_MS = 5_000;
/** While posts still wait at retention, the purge is looked at again this much later (at the latest). */
const RETENTION_RECHECK_MS = 60_000;

export interface RunOutputsDeps {
  sql: SqlLike;
  config: HostConfig;
  /** D1: the index's rows and the Slack app's stop state. */
  db: D1Database;
  schedule: AlarmSchedule;
  waitUntil: (promise: Promise<unknown>) => void;
  /** The run's approvals and questions still waiting (swept into the index when the run ends). */
  stillPending: () => Pick<RunSummary, "pending_approvals" | "pending_inputs">;
}

interface SlackSide {
  outbox: SlackOutbox;
  client: SlackAPIClient;
  botToken: string;
}

export class RunOutputs implements EngineObserver {
  readonly #deps: RunOutputsDeps;
  readonly #run: RunRecord;
  readonly #index: RunIndex;
  /** Set when the Slack app is on and the run was started from Slack. */
  readonly #slack: SlackSide | undefined;
  readonly #slackOn: boolean;
  #flushFailures = 0;

  constructor(deps: RunOutputsDeps, run: RunRecord) {
    this.#deps = deps;
    this.#run = run;
    this.#index = new RunIndex(deps.sql);
    const { config } = deps;
    const token = config.SLACK_BOT_TOKEN;
    this.#slackOn = config.SLACK_SIGNING_SECRET !== undefined && token !== undefined;
    if (this.#slackOn && token !== undefined && run.source === "slack" && run.slack) {
      const outbox = new SlackOutbox(deps.sql, config);
      outbox.init({ channel_id: run.channel_id, thread_ts: run.slack.thread_ts, message_ts: run.slack.message_ts });
      this.#slack = {
        outbox,
        client: createSlackClient({ SLACK_BOT_TOKEN: token, SLACK_API_BASE_URL: config.SLACK_API_BASE_URL }),
        botToken: token,
      };
    }
  }

  // ---- on the append path: storage only --------------------------------------

  appended(event: StoredEvent, fields: Record<string, unknown>, now: number): void {
    const at = new Date(now).toISOString();
    const context = this.#context();
    let marked = this.#index.markEvent(context, event.type, fields, at);
    const audit = auditOfEvent(context, event.type, fields, event.sequence, at);
    if (audit !== null) {
      this.#index.markAudit(audit);
      marked = true;
    }
    if (isTerminalEventType(event.type)) marked = this.#sweepPending() || marked;
    if (marked) this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
    if (this.#slack && this.#slack.outbox.enqueueEvent(event.json, now) > 0) this.#startDrain(now);
  }

  /** An audit entry of a change the run's object made without an event naming who (a cancel), flushed with the index. */
  recordAudit(entry: AuditEntry, now: number): void {
    this.#index.markAudit(entry);
    this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
  }

  summaryExtras(): Partial<RunSummary> {
    if (!this.#slackOn) return {};
    const counts = this.#slack?.outbox.counts() ?? { pending: 0, failed: 0 };
    return { slack_posts_pending: counts.pending, slack_posts_failed: counts.failed };
  }

  // ---- from the alarm ---------------------------------------------------------

  /** The alarm ran the engine's step (heartbeat included): now the index flush and the outbox, neither awaited. */
  afterAlarm(now: number): void {
    if (this.#index.pending > 0) this.#deps.waitUntil(this.#flush());
    if (this.#slack && this.#slack.outbox.nextAttemptAt() !== null) this.#startDrain(now);
  }

  /**
   * Retention is due. Posts still waiting are not dropped: the purge waits
   * (each post gives up by SLACK_DELIVERY_MAX_MS at the latest) and is looked
   * at again. Returns whether the run may be purged now.
   */
  mayPurge(now: number): boolean {
    const slack = this.#slack;
    if (!slack || slack.outbox.counts().pending === 0) return true;
    const next = slack.outbox.nextAttemptAt() ?? now;
    this.#deps.schedule.set("retention", Math.max(now + 1, Math.min(next + 1, now + RETENTION_RECHECK_MS)));
    this.#startDrain(now);
    return false;
  }

  /** Retention: the outbox goes with the events. The index's marks stay until written (the object flushes them). */
  purge(): void {
    this.#slack?.outbox.purge();
  }

  /** Marks not yet written to D1. */
  get indexPending(): number {
    return this.#index.pending;
  }

  // ---- the network steps ----------------------------------------------------------

  async #flush(): Promise<void> {
    const { schedule, db } = this.#deps;
    // If this flush is cut off, the alarm tries again.
    schedule.set("index", Date.now() + FLUSH_RETRY_AFTER_FAILURE_MS);
    const result = await this.#index.flush(db as IndexDb);
    if (result.status === "failed") {
      this.#flushFailures += 1;
      console.error(
        `run ${this.#run.run_id}: the run index could not be written to D1 (${this.#flushFailures} in a row; retried): ${redactText(result.error)}`,
      );
    } else this.#flushFailures = 0;
    const delay = nextFlushDelayMs({ ...result, remaining: this.#index.pending }, this.#flushFailures);
    if (delay === null) schedule.clear("index");
    else schedule.set("index", Date.now() + delay);
  }

  #startDrain(now: number): void {
    const slack = this.#slack;
    if (!slack) return;
    // If this drain is cut off (eviction, a hung call), the alarm tries again.
    this.#deps.schedule.setEarliest("slack", now + DEFAULT_CALL_TIMEOUT_MS + DRAIN_WATCHDOG_MARGIN_MS);
    const isStopped = () =>
      isPostingStopped(this.#deps.db, slack.botToken).catch((err: unknown) => {
        console.warn(`run ${this.#run.run_id}: the Slack stop state could not be read; posting goes on: ${redactText(String(err))}`);
        return false;
      });
    const drained = slack.outbox
      .drain(slack.client, () => Date.now(), isStopped)
      .catch((err: unknown) => {
        console.error(`run ${this.#run.run_id}: the Slack outbox stopped on an unexpected error: ${redactText(String(err))}`);
      })
      .then(() => {
        const next = slack.outbox.nextAttemptAt();
        if (next === null) this.#deps.schedule.clear("slack");
        else this.#deps.schedule.set("slack", next);
      });
    this.#deps.waitUntil(drained);
  }

  // ---- helpers ----------------------------------------------------------------------

  #context(): RunIndexContext {
    const run = this.#run;
    return {
      run_id: run.run_id,
      channel_id: run.channel_id,
      user_id: run.user_id,
      ...(run.requested_by !== undefined ? { requested_by: run.requested_by } : {}),
      ...(run.on_behalf_of !== undefined ? { on_behalf_of: run.on_behalf_of } : {}),
      delivery_id: run.delivery_id,
      source: run.source ?? "api",
      created_at: run.created_at,
    };
  }

  /**
   * The run ended with approvals or questions still waiting (an internal
   * error, say): they can never be decided now, so the index records them as
   * cancelled and no entry stays pending for ever.
   */
  #sweepPending(): boolean {
    const { pending_approvals, pending_inputs } = this.#deps.stillPending();
    const run_id = this.#run.run_id;
    for (const a of pending_approvals) this.#index.markApprovalResolved({ approval_id: a.approval_id, run_id, status: "cancelled" });
    for (const q of pending_inputs) this.#index.markInputResolved({ run_id, tool_call_id: q.tool_call_id, status: "cancelled" });
    return pending_approvals.length + pending_inputs.length > 0;
  }
}

/**
 * After retention the run's parts are gone but index marks may remain (D1
 * was down): the purged object flushes them from its alarm. Returns when to
 * try again (ms since epoch), or null when nothing remains.
 */
export async function flushLeftoverMarks(sql: SqlLike, db: D1Database, runId: string, now: number): Promise<number | null> {
  const index = new RunIndex(sql);
  if (index.pending === 0) return null;
  const result = await index.flush(db as IndexDb);
  if (result.status === "failed")
    console.error(`run ${runId}: the run index could not be written to D1 after retention (retried): ${redactText(result.error)}`);
  const delay = nextFlushDelayMs({ ...result, remaining: index.pending });
  return delay === null ? null : now + delay;
}
