// RunObject: one Durable Object per run. It is the only writer of the run's
// events: it owns the sequence (the event log in its SQLite storage), the
// subscriber set, the alarm (heartbeats, the scripted model's thinking time,
// retention) and the agent loop. Logic lives in the pure modules of src/;
// this class persists, schedules and fans out.
import { DurableObject } from "cloudflare:workers";
import { loadConfig, type HostConfig } from "../src/config";
import { Deadlines } from "../src/deadlines";
import type { Env } from "../src/env";
import { EventLog } from "../src/event-log";
import { isTerminalEventType, type EventType, type StoredEvent } from "../src/events";
import { defaultScript, scriptedTurn } from "../src/providers/scripted";
import { isTerminalStatus, type RunRecord, type RunStatus, type RunSummary } from "../src/run-record";
import { newSubscriptionId } from "../src/run-ids";
import { encodeSseFrame, SSE_HEADERS } from "../src/sse";
import { SubscriberRegistry } from "../src/subscriber-registry";
import { SubscriberStream } from "../src/subscriber-stream";
import type { ScriptTurn } from "../src/trigger-request";

export interface StartRunInput {
  run_id: string;
  channel_id: string;
  user_id: string;
  delivery_id: string | null;
  message: string;
  max_tool_calls: number | null;
  script: ScriptTurn[] | null;
}

export type CancelResult = { found: false } | { found: true; status: "cancelling" | RunStatus; already_ended: boolean };

const MS_PER_SECOND = 1_000;

export class RunObject extends DurableObject<Env> {
  #config!: HostConfig;
  #log!: EventLog;
  #deadlines!: Deadlines;
  #run: RunRecord | undefined;
  #script: ScriptTurn[] = [];
  readonly #subscribers = new SubscriberRegistry<SubscriberStream>();
  /** When the last event was appended; heartbeats fill silences longer than the interval. */
  #lastAppendAt = Date.now();
  /** The alarm time as last set by this instance (null: none armed). */
  #armedAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      const loaded = loadConfig(env);
      if (loaded.state === "bad_config") {
        // The Worker answers 503 before ever reaching a run; this is a guard for direct callers.
        throw new Error(`RunObject cannot start: ${loaded.message}`);
      }
      this.#config = loaded.config;
      const sql = ctx.storage.sql;
      sql.exec(`CREATE TABLE IF NOT EXISTS run (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL, script TEXT NOT NULL)`);
      this.#log = new EventLog(sql, this.#config.RUN_MAX_EVENTS);
      this.#deadlines = new Deadlines(sql);
      const row = sql.exec<{ record: string; script: string }>(`SELECT record, script FROM run WHERE id = 1`).toArray()[0];
      if (row) {
        this.#run = JSON.parse(row.record) as RunRecord;
        this.#script = JSON.parse(row.script) as ScriptTurn[];
      }
      this.#armedAt = await ctx.storage.getAlarm();
    });
  }

  // ---- RPC surface used by the Worker ------------------------------------

  /** Starts the run once; a second start (duplicate delivery) changes nothing. */
  async start(input: StartRunInput): Promise<{ created: boolean }> {
    if (this.#run) return { created: false };
    const now = Date.now();
    this.#script = input.script ?? defaultScript(input.message);
    this.#run = {
      run_id: input.run_id,
      channel_id: input.channel_id,
      user_id: input.user_id,
      delivery_id: input.delivery_id,
      max_tool_calls: input.max_tool_calls,
      created_at: new Date(now).toISOString(),
      ended_at: null,
      status: "running",
      phase: { kind: "thinking", turn: 0, ready_at: now + (this.#script[0]?.delay_ms ?? 0) },
      tool_calls: 0,
      last_text: null,
    };
    this.ctx.storage.sql.exec(
      `INSERT INTO run (id, record, script) VALUES (1, ?, ?)`,
      JSON.stringify(this.#run),
      JSON.stringify(this.#script),
    );
    this.#append("run_started", { user_id: input.user_id });
    this.#advance();
    return { created: true };
  }

  async summary(): Promise<RunSummary | null> {
    const run = this.#run;
    if (!run) return null;
    return {
      run_id: run.run_id,
      channel_id: run.channel_id,
      status: run.status,
      last_sequence: this.#log.lastSequence,
      earliest_sequence: this.#log.earliestSequence,
      subscribers: this.#subscribers.size,
      pending_approvals: [],
      pending_inputs: [],
      created_at: run.created_at,
      ...(run.ended_at ? { ended_at: run.ended_at } : {}),
    };
  }

  async cancel(): Promise<CancelResult> {
    const run = this.#run;
    if (!run) return { found: false };
    if (isTerminalStatus(run.status)) return { found: true, status: run.status, already_ended: true };
    this.#deadlines.clear("turn");
    this.#end("run_failed", { error: { code: "cancelled", message: "The run was cancelled." } });
    return { found: true, status: "cancelling", already_ended: false };
  }

  /**
   * The SSE route, reached through the Worker with `after` already validated:
   * GET /events?after=N[&client_key=K]. Replays from storage, then tails live.
   */
  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (!this.#run) return Response.json({ error: "not_found", message: "No such run." }, { status: 404 });
    const after = Number(url.searchParams.get("after") ?? "0");
    if (this.#log.hasGapAfter(after)) {
      const earliest = this.#log.earliestSequence;
      return Response.json(
        {
          error: "replay_gap",
          message: `Events up to sequence ${earliest - 1} are no longer retained; resume from sequence ${earliest - 1} or later.`,
          earliest_sequence: earliest,
        },
        { status: 410 },
      );
    }
    if (isTerminalStatus(this.#run.status) && after >= this.#log.lastSequence) {
      // Nothing will ever follow: 204 is how SSE tells an EventSource to stop reconnecting.
      return new Response(null, { status: 204, headers: { "x-run-id": this.#run.run_id } });
    }
    const subscriptionId = newSubscriptionId();
    const stream = new SubscriberStream({
      log: this.#log,
      after,
      isTerminal: () => this.#run !== undefined && isTerminalStatus(this.#run.status),
      onClosed: () => {
        this.#subscribers.release(subscriptionId);
      },
    });
    const clientKey = url.searchParams.get("client_key") ?? undefined;
    const superseded = this.#subscribers.attach({ id: subscriptionId, clientKey, sink: stream });
    superseded?.sink.close();
    this.#armHeartbeat();
    return new Response(stream.body, {
      headers: { ...SSE_HEADERS, "x-subscription-id": subscriptionId, "x-run-id": this.#run.run_id },
    });
  }

  override async alarm(): Promise<void> {
    this.#armedAt = null;
    const now = Date.now();
    for (const name of this.#deadlines.takeDue(now)) {
      if (name === "turn") this.#advance();
      else if (name === "retention") this.#purge();
    }
    if (this.#heartbeatActive() && now >= this.#lastAppendAt + this.#config.HEARTBEAT_INTERVAL_MS) {
      this.#append("heartbeat", {});
    }
    this.#rearm();
  }

  // ---- the agent loop ----------------------------------------------------

  /** Plays model turns that are ready; stops at the first one still thinking. */
  #advance(): void {
    const run = this.#run;
    while (run && run.status === "running" && run.phase.kind === "thinking") {
      const { turn: index, ready_at } = run.phase;
      if (Date.now() < ready_at) {
        this.#deadlines.set("turn", ready_at);
        this.#rearm();
        return;
      }
      const turn = scriptedTurn(this.#script, index);
      if (!turn) {
        this.#end("run_completed", { ...(run.last_text !== null ? { text: run.last_text } : {}), tool_calls: run.tool_calls });
        return;
      }
      if (turn.text !== undefined && turn.text !== "") {
        this.#append("assistant_message", { text: turn.text });
        run.last_text = turn.text;
      }
      const next = scriptedTurn(this.#script, index + 1);
      run.phase = { kind: "thinking", turn: index + 1, ready_at: Date.now() + (next?.delay_ms ?? 0) };
      this.#saveRun();
    }
  }

  // ---- appending and fan-out ---------------------------------------------

  /**
   * The append path for subclasses (the benchmark's object appends synthetic
   * events through exactly the code path real events take).
   */
  protected appendEvent(type: EventType, fields: Record<string, unknown>): StoredEvent | null {
    return this.#append(type, fields);
  }

  /**
   * Appends one event and pushes it to every live subscriber. Nothing is
   * appended after the terminal event (terminal fencing), whatever asks: a
   * late alarm, a late storage callback, a second cancel.
   */
  #append(type: EventType, fields: Record<string, unknown>): StoredEvent | null {
    const run = this.#run;
    if (!run || isTerminalStatus(run.status)) return null;
    const now = Date.now();
    const at = new Date(now).toISOString();
    const event = this.#log.append({ run_id: run.run_id, channel_id: run.channel_id, at }, type, fields);
    this.#lastAppendAt = now;
    // The status flips before fan-out so each subscriber already sees the run
    // as terminal and ends its response right after this frame.
    if (isTerminalEventType(type)) this.#settleEnd(run, type === "run_completed" ? "completed" : "failed", now);
    if (this.#subscribers.size > 0) {
      const bytes = encodeSseFrame(event.sequence, event.type, event.json);
      for (const { sink } of this.#subscribers.values()) sink.push(event, bytes);
    }
    return event;
  }

  #end(type: "run_completed" | "run_failed", fields: Record<string, unknown>): void {
    this.#append(type, fields);
  }

  #settleEnd(run: RunRecord, status: RunStatus, now: number): void {
    run.status = status;
    run.ended_at = new Date(now).toISOString();
    run.phase = { kind: "ended" };
    this.#saveRun();
    this.#deadlines.clear("turn");
    this.#deadlines.set("retention", now + this.#config.RUN_RETENTION_SECONDS * MS_PER_SECOND);
    this.#rearm();
  }

  #purge(): void {
    this.#log.purge();
    for (const { sink } of this.#subscribers.values()) sink.close();
  }

  #saveRun(): void {
    this.ctx.storage.sql.exec(`UPDATE run SET record = ? WHERE id = 1`, JSON.stringify(this.#run));
  }

  // ---- alarm scheduling ----------------------------------------------------

  #heartbeatActive(): boolean {
    return this.#run !== undefined && this.#run.status === "running" && this.#subscribers.size > 0;
  }

  #armHeartbeat(): void {
    if (this.#heartbeatActive()) this.#rearm();
  }

  /**
   * Arms the alarm for the earliest thing due. It only ever moves the alarm
   * earlier: an alarm that fires too soon (say, a heartbeat made unnecessary
   * by newer events) finds nothing due and re-arms, which keeps setAlarm off
   * the append path.
   */
  #rearm(): void {
    let next = this.#deadlines.earliest();
    if (this.#heartbeatActive()) {
      const heartbeatAt = this.#lastAppendAt + this.#config.HEARTBEAT_INTERVAL_MS;
      next = next === undefined ? heartbeatAt : Math.min(next, heartbeatAt);
    }
    if (next === undefined) return;
    if (this.#armedAt !== null && this.#armedAt <= next) return;
    this.#armedAt = next;
    void this.ctx.storage.setAlarm(next);
  }
}
