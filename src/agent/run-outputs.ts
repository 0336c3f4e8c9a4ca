// What a run sends beyond its own stream, written off the append path: the
// D1 run index of contract section 15 (a durable mark per appended event that
// changes a listing, flushed to D1 by the object's alarm) and, for runs
// started from Slack, the Slack outbox of contract section 14 (posts enqueued
// on each append, delivered in the background and retried by the alarm),
// and contract section 22's share of the run: its metric deltas
// (src/operate/run-metrics.ts) and, with tracing on, its spans
// (src/operate/trace-spans.ts), both sent from the same flush as the index,
// and its lifecycle log lines (src/operate/run-log.ts).
// The engine calls `appended` synchronously after every stored event; this
// module does storage work only there, and every network step (D1 flush,
// Slack delivery) runs outside the run's path (waitUntil and the alarm). An
// "index" or "slack" deadline is armed before each network step, so work cut
// off by an eviction is picked up by the alarm: nothing waits on a promise
// that might never settle.
import { refreshHomes } from "../slack/home-publish";
import { recordChannelCheck } from "../slack/channel-checks";
import type { SlackAPIClient } from "slack-web-api-client";
import type { HostConfig } from "../config/config";
import type { AuditEntry } from "../audit/audit-log";
import { auditOfEvent } from "../audit/run-audit";
import {
  FLUSH_RETRY_AFTER_FAILURE_MS,
  type IndexDb,
  nextFlushDelayMs,
  RunIndex,
  type RunIndexContext,
  type ShadowDifference,
} from "../listings/run-index";
import type { DispatchOutcome, ToolCall } from "../execution/tool-calls";
import type { Reminded } from "../execution/approval-nudges";
import { observePosts } from "../operate/run-hooks";
import { RunMetrics } from "../operate/run-metrics";
import { exportSpans, nextExportDelayMs, type TraceExportTarget } from "../operate/trace-export";
import { mcpSpanKey, RUN_SPAN_KEY, toolSpanKey, TraceSpans } from "../operate/trace-spans";
import type { AlarmSchedule } from "../schedule/alarm-schedule";
import { DEFAULT_CALL_TIMEOUT_MS, SlackOutbox } from "../slack/outbox";
import { isPostingStopped } from "../slack/stop-posting";
import { createSlackClient } from "../slack/web-api";
import { installSettingsOf } from "../slack/install-settings";
import { InstallationStore } from "../slack/installation-store";
import { usableInstallation } from "../slack/installation-tokens";
import type { SqlLike } from "../stream/event-log";
import { isTerminalEventType } from "../wire/events";
import type { RunEvent } from "../wire/event-schemas";
import type { ActionOrigin } from "../wire/run-protocol";
import type { EngineObserver } from "./run-engine";
import type { RunRecord, RunSummary } from "./run-record";
import { logger } from "../operate/logger";
import { logLifecycle } from "../operate/run-log";
import { runRequester } from "../policy/approval-policy";
import { RunWebhooks } from "../webhooks/run-webhooks";
import { WEBHOOK_ATTEMPT_TIMEOUT_MS } from "../webhooks/webhook-attempt";
import { parseMcpToolName } from "../execution/tool-policy";
import { REPLAY_EVENT_TYPES, replayCallOf, replayVotesOf } from "../listings/replay-facts";

/** Marks of one agent step are written together: the flush runs this long after the first of them. */
const INDEX_FLUSH_DELAY_MS = 50;
/** Events that change what someone may decide (the Home tab's list, contract section 19). */
const HOME_EVENT_TYPES = new Set([
  "approval_requested",
  "approval_vote",
  "approval_resolved",
  "human_input_requested",
  "human_input_received",
  "run_completed",
  "run_failed",
]);
/**
 * Events no observer but the Slack outbox reads: no index mark, audit entry,
 * metric, span or log line comes of them, so the observers' pass skips them.
 */
const QUIET_EVENT_TYPES: ReadonlySet<string> = new Set(["assistant_message", "heartbeat", "tool_execution_started"]);
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
  /** The name of the run's tool call (an MCP question's index row keeps it, for the Slack Home tab). */
  toolNameOf?: (toolCallId: string) => string | undefined;
  /** The run's record of a tool call (the latest of that id) and its admitted mutations of a tool, for the replay index (contract section 24). */
  callOf?: (toolCallId: string) => ToolCall | undefined;
  mutationsUsed?: (toolName: string) => number;
  /** Audit entries reached D1: wake the sealer to chain them (contract section 25). */
  auditWritten?: () => void;
}

interface SlackSide {
  outbox: SlackOutbox;
  /** The client a drain posts with, and whether posting stopped (asked once per drain, only when something waits). */
  connect: () => Promise<{ client: SlackAPIClient; isStopped: () => Promise<boolean> }>;
}

/** Contract section 26: a run object reads its installation's token from D1 at most this old. */
const INSTALLATION_TOKEN_MAX_AGE_MS = 5 * 60_000;

export class RunOutputs implements EngineObserver {
  readonly #deps: RunOutputsDeps;
  readonly #run: RunRecord;
  readonly #index: RunIndex;
  /** The run's counter deltas for GET /api/metrics (contract section 22), flushed with the index. */
  readonly #metrics: RunMetrics;
  /** The run's spans (contract section 22), when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  readonly #traces: { spans: TraceSpans; target: TraceExportTarget } | undefined;
  #exportFailures = 0;
  /** The export in flight: a second flush meanwhile shares it (never the same span sent twice at once). */
  #exporting: Promise<number | null> | null = null;
  /** Set when the Slack app is on and the run was started from Slack. */
  readonly #slack: SlackSide | undefined;
  readonly #slackOn: boolean;
  /** Set when WEBHOOKS names any endpoint (contract section 26): the run's webhook outbox. */
  readonly #webhooks: RunWebhooks | undefined;
  #flushFailures = 0;
  /** The run's index context: built once (its fields never change after the start), not on every append. */
  #indexContext: RunIndexContext | undefined;
  /** The origin of the person's action being judged (actingFrom), else undefined. */
  #origin: ActionOrigin | undefined;
  /** The last append's time, and its ISO 8601 form. */
  #at = { now: Number.NaN, iso: "" };
  /** An approval or question of this run changed since the last flush: the Home tabs are refreshed after the next one. */
  #homeChanged = false;
  /** Events appended since the observers last ran (appended()): the current step's, at most. */
  #unobserved: { event: RunEvent; now: number; origin: ActionOrigin | undefined }[] = [];

  constructor(deps: RunOutputsDeps, run: RunRecord) {
    this.#deps = deps;
    this.#run = run;
    this.#index = new RunIndex(deps.sql);
    this.#metrics = new RunMetrics(deps.sql, run.run_id);
    const { config } = deps;
    this.#traces =
      config.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
        ? undefined
        : {
            spans: new TraceSpans(deps.sql, {
              run_id: run.run_id,
              channel_id: run.channel_id,
              requested_by: run.requested_by ?? run.user_id,
            }),
            target: { endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, headers: config.OTEL_EXPORTER_OTLP_HEADERS },
          };
    this.#webhooks = config.WEBHOOKS.length > 0 ? new RunWebhooks(deps.sql, config, run.run_id) : undefined;
    const token = config.SLACK_BOT_TOKEN;
    const install = installSettingsOf(config);
    this.#slackOn = (config.SLACK_SIGNING_SECRET !== undefined && token !== undefined) || install !== null;
    if (this.#slackOn && run.source === "slack" && run.slack) {
      const consoleOrigin = config.PUBLIC_URL ?? run.slack.request_origin;
      // The Home tabs (contract section 19): published again through this outbox when this run's approvals or questions change.
      // With installations (contract section 26) only the run's installation's tabs, with its items, are refreshed.
      const installationTeam = install === null ? undefined : /^slack:([TE][A-Z0-9]{1,30}):/.exec(run.requested_by ?? "")?.[1];
      const homeSettings = {
        ...config,
        console_origin: consoleOrigin,
        ...(install === null ? {} : { installation_team: installationTeam ?? "-" }),
      };
      const outbox = new SlackOutbox(
        deps.sql,
        // Contract section 24: an escalation mentions only users of the run's installation (its requester's team).
        { ...config, installation_team: /^slack:([TE][A-Z0-9]{1,30}):/.exec(run.requested_by ?? "")?.[1] },
        undefined,
        (client, now) => refreshHomes(deps.db, client, homeSettings, now),
        // Contract section 19: the run's own channel check is kept for the Home tab (asked once per channel).
        (channel, allowed) => deps.waitUntil(recordChannelCheck(deps.db, channel, allowed, Date.now())),
      );
      outbox.init({
        channel_id: run.channel_id,
        thread_ts: run.slack.thread_ts,
        message_ts: run.slack.message_ts,
        ...(consoleOrigin === undefined ? {} : { console_origin: consoleOrigin }),
      });
      const spans = this.#traces?.spans;
      // Each post is a `slack.post` span of the run's trace when tracing is on.
      const observed = (client: SlackAPIClient): SlackAPIClient =>
        spans
          ? observePosts(client, {
              started: (method) => {
                const key = `slack:${crypto.randomUUID()}`;
                spans.start(key, "slack.post", RUN_SPAN_KEY, Date.now(), { "aee.slack_method": method });
                return key;
              },
              ended: (key, ok) => {
                if (spans.end(key, Date.now(), { "aee.outcome": ok ? "ok" : "error" }, !ok)) this.#exportSoon(Date.now());
              },
            })
          : client;
      if (install === null && token !== undefined) {
        // One workspace (contract section 14): one client; stopped once Slack said uninstalled or revoked.
        const client = observed(createSlackClient({ SLACK_BOT_TOKEN: token, SLACK_API_BASE_URL: config.SLACK_API_BASE_URL }));
        const isStopped = () =>
          isPostingStopped(deps.db, token).catch((err: unknown) => {
            logger.warn("slack: the stop state could not be read; posting goes on", { run_id: run.run_id, error: String(err) });
            return false;
          });
        this.#slack = { outbox, connect: async () => ({ client, isStopped }) };
      } else if (install !== null) {
        // Installations (contract section 26): the run posts with its own installation's token, read from D1
        // at most 5 minutes old (refreshed first when due); none (uninstalled, refresh_failed): posts stop.
        const installationId = run.slack.installation_id;
        const store = new InstallationStore(deps.db, install.keys);
        let cached: { at: number; client: SlackAPIClient | null } | undefined;
        const connect = async () => {
          if (cached === undefined || Date.now() - cached.at > INSTALLATION_TOKEN_MAX_AGE_MS) {
            const served = installationId === undefined ? null : await usableInstallation(store, install, installationId);
            const client =
              served === null
                ? null
                : observed(createSlackClient({ SLACK_BOT_TOKEN: served.bot_token, SLACK_API_BASE_URL: config.SLACK_API_BASE_URL }));
            cached = { at: Date.now(), client };
          }
          const client = cached.client;
          if (client === null)
            return {
              client: createSlackClient({ SLACK_BOT_TOKEN: "", SLACK_API_BASE_URL: config.SLACK_API_BASE_URL }),
              isStopped: async () => true,
            };
          return { client, isStopped: async () => false };
        };
        this.#slack = { outbox, connect };
      }
    }
  }

  // ---- on the append path: storage only --------------------------------------

  /** Runs a person's action (synchronous): the audit entries of the events it appends carry its origin (contract section 25). */
  actingFrom<T>(origin: ActionOrigin | undefined, act: () => T): T {
    this.#origin = origin;
    try {
      return act();
    } finally {
      this.#origin = undefined;
    }
  }

  /**
   * One appended event: kept for the observers, who run once for the events of
   * the step that appended it (a microtask after it, in the same turn and so in
   * the same implicit storage transaction: nothing is lost to an eviction),
   * and at once for the terminal event (the pending approvals are read as the
   * run ended) or before anything else this object is asked.
   */
  appended(event: RunEvent, now: number): void {
    // The origin is taken now: the observers run after the action that appended it (contract section 25).
    this.#unobserved.push({ event, now, origin: this.#origin });
    if (isTerminalEventType(event.type)) this.#observe();
    else if (this.#unobserved.length === 1) queueMicrotask(() => this.#observeQuietly());
  }

  #observeQuietly(): void {
    try {
      this.#observe();
    } catch (err) {
      logger.error("run outputs: the observers failed on a batch of events", { run_id: this.#run.run_id, error: String(err) });
    }
  }

  /**
   * The observers' one pass over the events appended since the last: the
   * index marks, audit entries, metrics, spans and lifecycle log lines, the
   * Slack posts; one flush deadline and one drain for the batch. Events no
   * observer reads (QUIET_EVENT_TYPES) reach the Slack outbox only.
   */
  #observe(): void {
    const batch = this.#unobserved;
    if (batch.length === 0) return;
    this.#unobserved = [];
    const context = this.#context();
    const slack = this.#slack;
    let marked = false;
    let posts = 0;
    let webhookNotes = 0;
    for (const { event, now, origin } of batch) {
      if (this.#webhooks) webhookNotes += this.#webhooks.enqueueEvent(event, now);
      if (slack) {
        if (HOME_EVENT_TYPES.has(event.type)) this.#homeChanged = true;
        posts += slack.outbox.enqueueEvent(event, now);
      }
      if (QUIET_EVENT_TYPES.has(event.type)) continue;
      // Appends of one step share their millisecond: its ISO form is made once for them.
      if (this.#at.now !== now) this.#at = { now, iso: new Date(now).toISOString() };
      const at = this.#at.iso;
      marked = this.#index.markEvent(context, event, at, this.#deps.toolNameOf) || marked;
      marked = this.#markReplay(event, at) || marked;
      const audit = auditOfEvent(context, event, at, origin);
      if (audit !== null) {
        this.#index.markAudit(audit);
        marked = true;
      }
      if (isTerminalEventType(event.type)) marked = this.#sweepPending() || marked;
      marked = this.#metrics.observeEvent(event, now) || marked;
      marked = (this.#traces?.spans.observeEvent(event, now) ?? false) || marked;
      // Contract section 22: the run's life at `info`, by run_id (its start, approvals, executions, end).
      logLifecycle(event);
    }
    const first = batch[0]!.now;
    if (slack && posts > 0) {
      marked = this.#syncSlackCounts() || marked;
      this.#startDrain(first);
    }
    // Contract section 26: notifications are stored here and sent off the append path.
    if (webhookNotes > 0) this.#startWebhooks(first);
    if (marked) this.#deps.schedule.setEarliest("index", first + INDEX_FLUSH_DELAY_MS);
  }

  /** The call's replay row and its decisions (contract section 24), marked with the event that changed them. */
  #markReplay(event: RunEvent, at: string): boolean {
    const callOf = this.#deps.callOf;
    if (callOf === undefined || !REPLAY_EVENT_TYPES.has(event.type) || !("tool_call_id" in event)) return false;
    const call = callOf(event.tool_call_id);
    if (call === undefined) return false;
    const server = parseMcpToolName(call.tool_name)?.server;
    const row = replayCallOf(event, at, call, {
      run_id: this.#run.run_id,
      channel_id: this.#run.channel_id,
      requester: runRequester(this.#run),
      trusted: server !== undefined && this.#deps.config.MCP_SERVERS[server]?.trust_annotations === true,
      used: this.#deps.mutationsUsed?.(call.tool_name) ?? 0,
    });
    if (row === null) return false;
    this.#index.markReplayCall(row);
    if (event.type === "approval_vote" || event.type === "approval_resolved") {
      for (const vote of replayVotesOf(call, this.#run.run_id, at)) this.#index.markReplayVote(vote);
    }
    return true;
  }

  /** MCP questions that ended unanswered (no event says so): the index records them, the Home tabs drop them. */
  questionsEnded(ended: { tool_call_id: string; input_id: string }[], status: "expired" | "cancelled", now: number): void {
    this.#observe();
    const run_id = this.#run.run_id;
    for (const q of ended) this.#index.markInputResolved({ run_id, tool_call_id: q.tool_call_id, input_id: q.input_id, status });
    if (this.#slack) this.#homeChanged = true;
    this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
  }

  /** Contract section 24: whether an approval's (or MCP question's) message is shown in Slack; only those are reminded. */
  readonly shownInSlack = (item: { approval_id?: string; input_id?: string }): boolean => this.#slack?.outbox.shows(item) ?? false;

  /** Contract section 24: a reminder was appended; its users are told directly, behind its own update (storage only). */
  reminded(item: Reminded, users: string[], now: number): void {
    if (this.#slack && this.#slack.outbox.enqueueReminders(item, users, now) > 0) {
      if (this.#syncSlackCounts()) this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
      this.#startDrain(now);
    }
  }

  /**
   * Where the shadow policy version's verdict at a check differed from the active one's (contract
   * section 24): a pending mark like any index row, written by the next flush (no D1 write of its own).
   */
  shadowDiffered(difference: Omit<ShadowDifference, "run_id" | "at">, now: number): void {
    this.#observe();
    this.#index.markShadowDifference({ ...difference, run_id: this.#run.run_id, at: new Date(now).toISOString() });
    this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
  }

  /** The call's tools/call is being sent (aee_approval_to_dispatch_seconds, the `mcp.send` span); storage only. */
  toolCallSent(toolCallId: string, now: number): void {
    this.#observe();
    this.#traces?.spans.start(mcpSpanKey(toolCallId), "mcp.send", toolSpanKey(toolCallId), now, { "aee.tool_call_id": toolCallId });
    if (this.#metrics.toolCallSent(toolCallId, now)) this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
  }

  /** The tools/call answered (or failed): the `mcp.send` span ends. */
  toolCallAnswered(toolCallId: string, outcome: DispatchOutcome | null, now: number): void {
    this.#observe();
    const failed = outcome === null || outcome.kind === "failed" || outcome.is_error;
    const label = outcome === null ? "error" : outcome.kind === "failed" ? outcome.code : outcome.is_error ? "tool_error" : "ok";
    if (this.#traces?.spans.end(mcpSpanKey(toolCallId), now, { "aee.outcome": label }, failed)) this.#exportSoon(now);
  }

  /** A model turn starts / ends: the `model.turn` span. */
  turnStarted(index: number, now: number): void {
    this.#observe();
    this.#traces?.spans.start(`turn:${index}`, "model.turn", RUN_SPAN_KEY, now, { "aee.turn": String(index) });
  }

  turnEnded(index: number, ok: boolean, now: number): void {
    this.#observe();
    if (this.#traces?.spans.end(`turn:${index}`, now, { "aee.outcome": ok ? "ok" : "error" }, !ok)) this.#exportSoon(now);
  }

  /** Whether the run is traced (OTEL_EXPORTER_OTLP_ENDPOINT set): then MCP requests carry `traceparent`. */
  get tracing(): boolean {
    return this.#traces !== undefined;
  }

  /** An audit entry of a change the run's object made without an event naming who (a cancel), flushed with the index. */
  /** An accepted cancel (contract section 18's `run.cancel`), by `principal`, from `origin`. */
  auditCancel(principal: string, origin: ActionOrigin, now: number): void {
    const runId = this.#run.run_id;
    const at = new Date(now).toISOString();
    this.recordAudit(
      { id: `aud_${runId}_cancel_${now}`, at, principal, action: "run.cancel", target: runId, result: "ok", ...origin },
      now,
    );
  }

  recordAudit(entry: AuditEntry, now: number): void {
    this.#observe();
    this.#index.markAudit(entry);
    this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
  }

  summaryExtras(): Partial<RunSummary> {
    this.#observe();
    if (!this.#slackOn) return {};
    const counts = this.#slack?.outbox.counts() ?? { pending: 0, failed: 0 };
    return { slack_posts_pending: counts.pending, slack_posts_failed: counts.failed };
  }

  // ---- from the alarm ---------------------------------------------------------

  /** The alarm ran the engine's step (heartbeat included): now the index flush and the outbox, neither awaited. */
  afterAlarm(now: number): void {
    this.#observe();
    if (this.#index.pending > 0 || this.#metrics.pending || (this.#traces?.spans.waiting ?? 0) > 0) this.#deps.waitUntil(this.#flush());
    if (this.#slack && this.#slack.outbox.nextAttemptAt() !== null) this.#startDrain(now);
    if (this.#webhooks && this.#webhooks.nextAttemptAt() !== null) this.#startWebhooks(now);
  }

  /**
   * Retention is due. Posts still waiting are not dropped: the purge waits
   * (each post gives up by SLACK_DELIVERY_MAX_MS at the latest) and is looked
   * at again. Returns whether the run may be purged now.
   */
  mayPurge(now: number): boolean {
    this.#observe();
    const slack = this.#slack;
    const slackWaits = slack !== undefined && slack.outbox.counts().pending > 0;
    // Contract section 26: the webhook outbox goes only once empty or given up (by WEBHOOK_DELIVERY_MAX_MS).
    const webhooksWait = this.#webhooks !== undefined && this.#webhooks.pending > 0;
    if (!slackWaits && !webhooksWait) return true;
    // The earliest due item of what waits (an item without a due time counts as due now).
    const dues: number[] = [];
    if (slackWaits) dues.push(slack?.outbox.nextAttemptAt() ?? now);
    if (webhooksWait) dues.push(this.#webhooks?.nextAttemptAt() ?? now);
    const next = Math.min(...dues);
    this.#deps.schedule.set("retention", Math.max(now + 1, Math.min(next + 1, now + RETENTION_RECHECK_MS)));
    if (slackWaits) this.#startDrain(now);
    if (webhooksWait) this.#startWebhooks(now);
    return false;
  }

  /** Retention: the outbox goes with the events. The index's marks stay until written (the object flushes them). */
  purge(): void {
    this.#observe();
    // Spans still unexported at retention go with the run's storage: counted as dropped.
    this.#metrics.add("aee_trace_spans_dropped_total", "", this.#traces?.spans.waiting ?? 0);
    this.#slack?.outbox.purge();
    // Posts dropped with the outbox no longer wait: the gauge falls (its delta outlives the purge, like the marks).
    this.#syncSlackCounts();
  }

  // ---- the network steps ----------------------------------------------------------

  async #flush(): Promise<void> {
    const { schedule, db } = this.#deps;
    // If this flush is cut off, the alarm tries again.
    schedule.set("index", Date.now() + FLUSH_RETRY_AFTER_FAILURE_MS);
    const result = await this.#index.flush(db as IndexDb);
    if ((result.audit ?? 0) > 0) this.#deps.auditWritten?.();
    const metrics = await this.#metrics.flush(db, Date.now());
    const error = result.status === "failed" ? result.error : metrics.status === "failed" ? metrics.error : null;
    if (error !== null) {
      this.#flushFailures += 1;
      logger.error("run index: could not be written to D1; retried", {
        run_id: this.#run.run_id,
        failures_in_a_row: this.#flushFailures,
        error,
      });
    } else this.#flushFailures = 0;
    // The listings now hold the change: the Home tabs read them, through the outbox.
    if (error === null && this.#homeChanged && this.#slack) {
      this.#homeChanged = false;
      this.#slack.outbox.enqueueHomeRefresh(Date.now());
      this.#startDrain(Date.now());
    }
    const traceDelay = await this.#exportTraces();
    const remaining = this.#index.pending + (this.#metrics.pending ? 1 : 0);
    const indexDelay = nextFlushDelayMs(
      error === null
        ? { status: "ok", written: result.written, remaining }
        : { status: "failed", written: result.written, remaining, error },
      this.#flushFailures,
    );
    const delays = [indexDelay, traceDelay].filter((d): d is number => d !== null);
    const delay = delays.length === 0 ? null : Math.min(...delays);
    if (delay === null) schedule.clear("index");
    else schedule.set("index", Date.now() + delay);
  }

  /** Sends the run's ended spans (never throws; the collector's trouble is only logged). Returns when to try again. */
  #exportTraces(): Promise<number | null> {
    this.#exporting ??= this.#exportOnce().finally(() => {
      this.#exporting = null;
    });
    return this.#exporting;
  }

  async #exportOnce(): Promise<number | null> {
    const traces = this.#traces;
    if (!traces) return null;
    const result = await exportSpans(traces.spans, traces.target, Date.now());
    if (result.status !== "idle" && result.dropped > 0) {
      this.#metrics.add("aee_trace_spans_dropped_total", "", result.dropped);
      logger.warn("traces: spans dropped after their retry window", { run_id: this.#run.run_id, dropped: result.dropped });
    }
    if (result.status === "failed") {
      this.#exportFailures += 1;
      logger.warn("traces: the collector did not take the spans; retried", {
        run_id: this.#run.run_id,
        failures_in_a_row: this.#exportFailures,
        error: result.error,
      });
    } else this.#exportFailures = 0;
    return nextExportDelayMs(result, this.#exportFailures);
  }

  /** A span ended: the export runs with the next flush. */
  #exportSoon(now: number): void {
    this.#deps.schedule.setEarliest("index", now + INDEX_FLUSH_DELAY_MS);
  }

  #startDrain(now: number): void {
    const slack = this.#slack;
    if (!slack) return;
    // If this drain is cut off (eviction, a hung call), the alarm tries again.
    this.#deps.schedule.setEarliest("slack", now + DEFAULT_CALL_TIMEOUT_MS + DRAIN_WATCHDOG_MARGIN_MS);
    const drained = slack
      .connect()
      .then(({ client, isStopped }) => slack.outbox.drain(client, () => Date.now(), isStopped))
      .catch((err: unknown) => {
        logger.error("slack: the outbox stopped on an unexpected error", { run_id: this.#run.run_id, error: String(err) });
      })
      .then(() => {
        if (this.#syncSlackCounts()) this.#deps.schedule.setEarliest("index", Date.now() + INDEX_FLUSH_DELAY_MS);
        const next = slack.outbox.nextAttemptAt();
        if (next === null) this.#deps.schedule.clear("slack");
        else this.#deps.schedule.set("slack", next);
      });
    this.#deps.waitUntil(drained);
  }

  #startWebhooks(now: number): void {
    const webhooks = this.#webhooks;
    if (!webhooks) return;
    // If this drain is cut off (eviction, a hung receiver), the alarm tries again.
    this.#deps.schedule.setEarliest("webhooks", now + WEBHOOK_ATTEMPT_TIMEOUT_MS + DRAIN_WATCHDOG_MARGIN_MS);
    const drained = webhooks
      .drain(this.#deps.db, () => Date.now(), this.#deps.auditWritten)
      .catch((err: unknown) => {
        logger.error("webhooks: the run's outbox stopped on an unexpected error", { run_id: this.#run.run_id, error: String(err) });
      })
      .then(() => {
        const next = webhooks.nextAttemptAt();
        if (next === null) this.#deps.schedule.clear("webhooks");
        else this.#deps.schedule.set("webhooks", next);
      });
    this.#deps.waitUntil(drained);
  }

  // ---- helpers ----------------------------------------------------------------------

  /** Reports the outbox's counts to the metrics (a no-op without an outbox). */
  #syncSlackCounts(): boolean {
    return this.#slack ? this.#metrics.slackCounts(this.#slack.outbox.counts()) : false;
  }

  #context(): RunIndexContext {
    this.#indexContext ??= this.#buildContext();
    return this.#indexContext;
  }

  #buildContext(): RunIndexContext {
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
      ...(run.request !== undefined ? { request: run.request } : {}),
      requester_person: runRequester(run).person,
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
    for (const q of pending_inputs) {
      const mcp = q.input_id === undefined ? {} : { input_id: q.input_id };
      this.#index.markInputResolved({ run_id, tool_call_id: q.tool_call_id, ...mcp, status: "cancelled" });
    }
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
  const metrics = new RunMetrics(sql, runId);
  if (index.pending === 0 && !metrics.pending) return null;
  const result = await index.flush(db as IndexDb);
  const sent = await metrics.flush(db, now);
  const error = result.status === "failed" ? result.error : sent.status === "failed" ? sent.error : null;
  if (error !== null) logger.error("run index: could not be written to D1 after retention; retried", { run_id: runId, error });
  const remaining = index.pending + (metrics.pending ? 1 : 0);
  const delay = nextFlushDelayMs(
    error === null ? { status: "ok", written: result.written, remaining } : { status: "failed", written: result.written, remaining, error },
  );
  return delay === null ? null : now + delay;
}
