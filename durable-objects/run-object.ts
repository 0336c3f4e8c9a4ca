// RunObject: one Durable Object per run. It is the only writer of the run's
// events: it owns the sequence (the event log in its SQLite storage), the
// subscriber set, the alarm (heartbeats, the scripted model's thinking time,
// approval and question expiry, admission deadlines, retention) and the agent
// loop. Decisions live in the pure modules of src/ (tool-calls, tool-policy,
// event-log, subscriber-*); this class persists, schedules, dispatches and
// fans out.
import { DurableObject } from "cloudflare:workers";
import { argumentsDigest } from "../src/execution/arguments-digest";
import { loadConfig, type HostConfig } from "../src/config/config";
import { Deadlines } from "../src/schedule/deadlines";
import type { Env } from "../src/config/env";
import { EventLog } from "../src/stream/event-log";
import { MutationLedger } from "../src/outcomes/mutation-ledger";
import { newMutationId, type OutcomeDb, type Settlement } from "../src/outcomes/mutation-outcomes";
import { isTerminalEventType, type EventType, type StoredEvent } from "../src/stream/events";
import { Conversation, toolResultsItem } from "../src/agent/conversation-log";
import { callMcpTool, listMcpTools, type McpServerConfig, type McpToolInfo, type TransportCaps } from "../src/execution/mcp-transport";
import {
  ModelError,
  modelProviderFromConfig,
  type ModelProvider,
  type ModelToolSpec,
  type ModelTurn,
} from "../src/providers/model-provider";
import { defaultScript, scriptedTurn } from "../src/providers/scripted";
import { redactSecrets } from "../src/execution/redaction";
import {
  isTerminalStatus,
  type CancelResult,
  type RouteAnswer,
  type RunRecord,
  type RunStatus,
  type RunSummary,
  type StartRunInput,
} from "../src/agent/run-record";
import { newApprovalId, newSubscriptionId, newToolCallId } from "../src/ids";
import { encodeSseFrame, SSE_HEADERS } from "../src/stream/sse";
import { SubscriberRegistry } from "../src/stream/subscriber-registry";
import { SubscriberStream } from "../src/stream/subscriber-stream";
import {
  advanceAdmission,
  announce,
  answerInput,
  cancelPending,
  decideApproval,
  expireDue,
  hasDispatched,
  nextDeadline,
  refuseDispatch,
  settleDispatch,
  turnDone,
  type Decision,
  type DispatchOutcome,
  type Effect,
  type Limits,
  type ToolCallRecord,
  type TurnState,
  HUMAN_ASK_TOOL,
} from "../src/execution/tool-calls";
import { classifyTool, parseMcpToolName } from "../src/execution/tool-policy";
import type { ScriptTurn } from "../src/http/trigger-request";
import { globalStoragePool } from "../src/outcomes/storage-pool-rpc";

const MS_PER_SECOND = 1_000;
/** Model turns per run before the run is stopped: a loop guard, far above any real agent turn. */
const MAX_MODEL_TURNS = 50;

/** One model response, whoever produced it. `final`: the model is done (no more turns). */
interface ModelStep {
  text?: string;
  tool_calls: ProposedCall[];
  final: boolean;
}

interface ProposedCall {
  tool_name: string;
  arguments: Record<string, unknown>;
  tool_call_id?: string;
}

const HUMAN_ASK_SPEC: ModelToolSpec = {
  name: HUMAN_ASK_TOOL,
  description: "Ask a person in the channel a question and wait for their answer.",
  input_schema: {
    type: "object",
    properties: { question: { type: "string", description: "The question to ask." } },
    required: ["question"],
  },
};

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
  /** The agent loop's driver: "idle", or "driving" with another pass requested or not. */
  #driver: "idle" | "driving" | "driving_again" = "idle";
  /** Calls this instance dispatched and is still waiting on; any other "dispatched" call was lost to a restart. */
  readonly #inFlight = new Set<string>();
  /** MCP tool lists, fetched once per server per instance. */
  readonly #toolLists = new Map<string, Promise<McpToolInfo[] | undefined>>();
  /** Intent writes started at approval, awaited by the dispatch pipeline. */
  readonly #intents = new Map<string, ReturnType<MutationLedger["intent"]>>();
  /** The real model, or undefined for the scripted provider. */
  #provider: ModelProvider | undefined;
  #conversation!: Conversation;
  /** Aborts the model call in flight when the run is cancelled. */
  #modelCall: AbortController | undefined;
  /** Where outcome rows are written: D1, or a test's seam in front of it. */
  #outcomeDb: OutcomeDb;
  #ledger!: MutationLedger;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#outcomeDb = env.DB;
    void ctx.blockConcurrencyWhile(async () => {
      const loaded = loadConfig(env);
      if (loaded.state === "bad_config") {
        // The Worker answers 503 before ever reaching a run; this guards direct callers.
        throw new Error(`RunObject cannot start: ${loaded.message}`);
      }
      this.#config = loaded.config;
      this.#provider = modelProviderFromConfig(this.#config);
      this.#ledger = new MutationLedger(() => this.#outcomeDb, globalStoragePool(env.STORAGE_POOL), this.#config.STORAGE_WAIT_MS);
      const sql = ctx.storage.sql;
      sql.exec(`CREATE TABLE IF NOT EXISTS run (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL, script TEXT NOT NULL)`);
      this.#log = new EventLog(sql, this.#config.RUN_MAX_EVENTS);
      this.#deadlines = new Deadlines(sql);
      this.#conversation = new Conversation(sql);
      const row = sql.exec<{ record: string; script: string }>(`SELECT record, script FROM run WHERE id = 1`).toArray()[0];
      if (row) {
        this.#run = JSON.parse(row.record) as RunRecord;
        this.#script = JSON.parse(row.script) as ScriptTurn[];
      }
      this.#armedAt = await ctx.storage.getAlarm();
      // A run that was mid-turn when the object went away picks up where it was.
      if (this.#run?.status === "running") this.#kick();
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
      calls: [],
      counters: { admitted: 0, used: {} },
      tool_calls: 0,
      last_text: null,
      cancel_requested: false,
    };
    this.ctx.storage.sql.exec(
      `INSERT INTO run (id, record, script) VALUES (1, ?, ?)`,
      JSON.stringify(this.#run),
      JSON.stringify(this.#script),
    );
    if (this.#provider) this.#conversation.append({ role: "user", text: input.message });
    this.#append("run_started", { user_id: input.user_id });
    this.#kick();
    return { created: true };
  }

  async summary(): Promise<RunSummary | null> {
    const run = this.#run;
    if (!run) return null;
    const calls = run.calls;
    return {
      run_id: run.run_id,
      channel_id: run.channel_id,
      status: run.status,
      last_sequence: this.#log.lastSequence,
      earliest_sequence: this.#log.earliestSequence,
      subscribers: this.#subscribers.size,
      pending_approvals: calls
        .filter((c) => c.state === "awaiting_approval")
        .map((c) => ({
          approval_id: c.approval!.approval_id,
          tool_call_id: c.tool_call_id,
          tool_name: c.tool_name,
          expires_at: new Date(c.approval!.expires_at).toISOString(),
        })),
      pending_inputs: calls
        .filter((c) => c.state === "awaiting_input")
        .map((c) => ({
          tool_call_id: c.tool_call_id,
          question: c.input!.question,
          expires_at: new Date(c.input!.expires_at).toISOString(),
        })),
      created_at: run.created_at,
      ...(run.ended_at ? { ended_at: run.ended_at } : {}),
    };
  }

  async cancel(): Promise<CancelResult> {
    const run = this.#run;
    if (!run) return { found: false };
    if (isTerminalStatus(run.status)) return { found: true, status: run.status, already_ended: true };
    run.cancel_requested = true;
    this.#deadlines.clear("turn");
    this.#modelCall?.abort();
    const turn = this.#currentTurn();
    if (turn) this.#apply(cancelPending(turn, Date.now()));
    this.#saveRun();
    // A dispatched call is not abandoned: the run ends once its result is reported.
    if (!turn || !hasDispatched(turn)) this.#append("run_failed", { error: { code: "cancelled", message: "The run was cancelled." } });
    return { found: true, status: "cancelling", already_ended: false };
  }

  async decideApproval(approvalId: string, decision: Decision): Promise<RouteAnswer> {
    const call = this.#run?.calls.find((c) => c.approval?.approval_id === approvalId);
    if (!this.#run || !call) return notFound("approval", approvalId);
    const answer = decideApproval(call, decision, this.#limits(), Date.now());
    if ("effects" in answer) this.#applyAndAdvance(answer.effects);
    return { status: answer.status, body: answer.body };
  }

  /** Test seam: outcome storage through `db` (a wrapper that can stall, fail or hold writes) instead of D1. */
  useOutcomeDbForTests(db: OutcomeDb): void {
    this.#outcomeDb = db;
  }

  async answerInput(toolCallId: string, answer: string, answeredBy: string): Promise<RouteAnswer> {
    const call = this.#run?.calls.find((c) => c.tool_call_id === toolCallId && c.kind === "human_ask");
    if (!this.#run || !call) return notFound("question", toolCallId);
    const result = answerInput(call, answer, answeredBy, Date.now());
    if ("effects" in result) this.#applyAndAdvance(result.effects);
    return { status: result.status, body: result.body };
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
    if (this.#heartbeatActive()) this.#rearm();
    return new Response(stream.body, {
      headers: { ...SSE_HEADERS, "x-subscription-id": subscriptionId, "x-run-id": this.#run.run_id },
    });
  }

  override async alarm(): Promise<void> {
    this.#armedAt = null;
    const now = Date.now();
    for (const name of this.#deadlines.takeDue(now)) {
      if (name === "retention") this.#purge();
      else if (name === "calls") {
        const turn = this.#currentTurn();
        if (turn) this.#applyAndAdvance(expireDue(turn, now));
      } else this.#kick();
    }
    if (this.#heartbeatActive() && now >= this.#lastAppendAt + this.#config.HEARTBEAT_INTERVAL_MS) {
      this.#append("heartbeat", {});
    }
    this.#rearm();
  }

  // ---- the agent loop ----------------------------------------------------

  /** Runs the loop unless it is already running, in which case it makes one more pass. */
  #kick(): void {
    if (this.#driver !== "idle") {
      this.#driver = "driving_again";
      return;
    }
    this.#driver = "driving";
    void this.#drive()
      .catch((err: unknown) => this.#failRun("internal_error", `The run stopped on an unexpected error: ${(err as Error).message}`))
      .finally(() => {
        const again = this.#driver === "driving_again";
        this.#driver = "idle";
        if (again) this.#kick();
      });
  }

  async #drive(): Promise<void> {
    const run = this.#run;
    while (run && run.status === "running") {
      this.#driver = "driving";
      if (run.phase.kind === "thinking") {
        const turn = this.#provider ? await this.#askModel(run, run.phase.turn) : this.#scriptedModelTurn(run, run.phase.turn);
        if (turn === "waiting" || run.status !== "running") return;
        if (turn === "finished") {
          this.#append("run_completed", { ...(run.last_text !== null ? { text: run.last_text } : {}), tool_calls: run.tool_calls });
          return;
        }
        if (turn.text !== undefined && turn.text !== "") {
          this.#append("assistant_message", { text: turn.text });
          run.last_text = turn.text;
        }
        if (turn.tool_calls.length > 0) await this.#startToolTurn(run, turn.tool_calls);
        else if (turn.final) {
          this.#append("run_completed", { ...(run.last_text !== null ? { text: run.last_text } : {}), tool_calls: run.tool_calls });
          return;
        } else this.#nextModelTurn(run);
        continue;
      }
      const turn = this.#currentTurn();
      if (turn) {
        await this.#recoverLostDispatches(turn.calls);
        this.#apply(advanceAdmission(turn, run.counters, this.#limits(), Date.now()));
        if (turnDone(turn)) {
          // Every call of the turn ended: their results go back to the model (the scripted one ignores them).
          if (this.#provider) this.#conversation.append(toolResultsItem(turn.calls));
          this.#nextModelTurn(run);
          continue;
        }
        this.#armCallDeadline();
        this.#saveRun();
        return;
      }
      return;
    }
  }

  /** The scripted provider's turn `index`: "waiting" while it thinks (the alarm resumes the loop), "finished" once played out. */
  #scriptedModelTurn(run: RunRecord, index: number): ModelStep | "waiting" | "finished" {
    if (run.phase.kind === "thinking" && Date.now() < run.phase.ready_at) {
      this.#deadlines.set("turn", run.phase.ready_at);
      this.#rearm();
      return "waiting";
    }
    const turn = scriptedTurn(this.#script, index);
    if (!turn) return "finished";
    return { text: turn.text, tool_calls: turn.tool_calls ?? [], final: false };
  }

  /**
   * One turn of a real model: the conversation so far, the tools, the
   * system prompt. A model call changes nothing, so the provider retries it;
   * one that keeps failing ends the run with run_failed(model_error).
   */
  async #askModel(run: RunRecord, index: number): Promise<ModelStep | "waiting" | "finished"> {
    if (index >= MAX_MODEL_TURNS) {
      this.#failRun("model_error", `The model took more than ${MAX_MODEL_TURNS} turns without finishing; the run was stopped.`);
      return "waiting";
    }
    const abort = new AbortController();
    this.#modelCall = abort;
    let turn: ModelTurn;
    try {
      turn = await this.#provider!.next(
        { system: this.#config.SYSTEM_PROMPT, conversation: this.#conversation.items(), tools: await this.#modelTools() },
        abort.signal,
      );
    } catch (err) {
      if (run.status === "running") {
        const message = err instanceof ModelError ? err.message : `The model call failed unexpectedly: ${(err as Error).message}`;
        this.#append("run_failed", { error: { code: "model_error", message } });
      }
      return "waiting";
    } finally {
      this.#modelCall = undefined;
    }
    if (run.status !== "running") return "waiting";
    this.#conversation.append({ role: "assistant", ...(turn.text !== undefined ? { text: turn.text } : {}), tool_calls: turn.tool_calls });
    if (turn.stop === "max_tokens" && turn.tool_calls.length > 0) {
      // Cut off mid-call: nothing of it runs; the provider tells the model so on the next request.
      return { text: turn.text, tool_calls: [], final: false };
    }
    return { text: turn.text, tool_calls: turn.tool_calls, final: turn.tool_calls.length === 0 };
  }

  /** What the model may call: every tool of every configured MCP server, and human__ask. */
  async #modelTools(): Promise<ModelToolSpec[]> {
    const tools: ModelToolSpec[] = [HUMAN_ASK_SPEC];
    for (const [server, settings] of Object.entries(this.#config.MCP_SERVERS)) {
      for (const tool of (await this.#toolList(server, settings)) ?? []) {
        tools.push({ name: `mcp__${server}__${tool.name}`, description: tool.description ?? "", input_schema: tool.inputSchema });
      }
    }
    return tools;
  }

  /** Announces every call of the turn and asks every approval at once. */
  async #startToolTurn(run: RunRecord, proposals: ProposedCall[]): Promise<void> {
    const now = Date.now();
    const limits = this.#limits();
    const turnIndex = run.phase.kind === "thinking" ? run.phase.turn : 0;
    const calls: ToolCallRecord[] = [];
    for (const [index, proposed] of proposals.entries()) {
      const info = await this.#toolInfo(proposed.tool_name);
      const tool = classifyTool(proposed.tool_name, info, this.#config);
      calls.push({
        turn: turnIndex,
        index,
        tool_call_id: proposed.tool_call_id ?? newToolCallId(),
        tool_name: proposed.tool_name,
        arguments: proposed.arguments,
        arguments_digest: await argumentsDigest(proposed.arguments),
        ...tool,
        state: "awaiting_admission",
        started_at: now,
        approved: false,
      });
    }
    if (run.status !== "running") return; // cancelled while the tool lists were fetched
    run.phase = { kind: "tools", turn: turnIndex };
    run.calls.push(...calls);
    run.tool_calls += calls.length;
    for (const call of calls) this.#apply(announce(call, redactSecrets(call.arguments), limits, now, newApprovalId()));
    this.#saveRun();
  }

  #nextModelTurn(run: RunRecord): void {
    const index = run.phase.kind === "ended" ? 0 : run.phase.turn + 1;
    run.phase = { kind: "thinking", turn: index, ready_at: Date.now() + (scriptedTurn(this.#script, index)?.delay_ms ?? 0) };
    this.#saveRun();
  }

  #applyAndAdvance(effects: Effect[]): void {
    this.#apply(effects);
    this.#saveRun();
    this.#kick();
  }

  /**
   * Appends the events the pure logic decided on and starts the dispatches it
   * admitted; then brings the durable rows along: an intent for every newly
   * approved mutation, and not_executed for every intent whose call ended
   * before dispatch.
   */
  #apply(effects: Effect[]): void {
    for (const effect of effects) {
      if (effect.kind === "emit") this.#append(effect.type, effect.fields);
      else this.#dispatch(effect.call);
    }
    for (const call of this.#run?.calls ?? []) {
      if (call.mutating && call.approved && call.mutation_id === undefined && call.state !== "done") this.#recordIntent(call);
      else if (call.mutation_id !== undefined && call.state === "done" && !call.row_owned_by_dispatch) {
        call.row_owned_by_dispatch = true; // settled here, once
        this.#settleUnsent(call, call.reason ?? "cancelled");
      }
    }
  }

  /** The intent row, from the moment the mutation is approved. */
  #recordIntent(call: ToolCallRecord): void {
    const run = this.#run!;
    call.mutation_id = newMutationId();
    this.#intents.set(
      call.tool_call_id,
      afterThisTurn().then(() => this.#intentFor(run, call)),
    );
  }

  #intentFor(run: RunRecord, call: ToolCallRecord) {
    return this.#ledger.intent(this.#intentInput(run, call));
  }

  #intentInput(run: RunRecord, call: ToolCallRecord) {
    return {
      mutationId: call.mutation_id!,
      runId: run.run_id,
      channelId: run.channel_id,
      deliveryId: run.delivery_id,
      toolCallId: call.tool_call_id,
      approvalId: call.approval?.approval_id ?? null,
      toolName: call.tool_name,
      argumentsDigest: call.arguments_digest,
    };
  }

  /** Runs one admitted call through the write-ahead pipeline; its result is reported even if the run was cancelled meanwhile. */
  #dispatch(call: ToolCallRecord): void {
    this.#inFlight.add(call.tool_call_id);
    call.row_owned_by_dispatch = true;
    this.#saveRun(); // "dispatched" is on disk before anything leaves
    // #execute decides; the decision is applied here, once, only if the call is still this instance's to settle.
    void afterThisTurn()
      .then(() => this.#execute(call))
      .catch(
        (err: unknown) => () =>
          settleDispatch(call, { kind: "failed", code: "transport_error", message: (err as Error).message }, Date.now()),
      )
      .then((decide) => {
        this.#inFlight.delete(call.tool_call_id);
        const run = this.#run;
        if (!run || call.state !== "dispatched") return;
        this.#apply(decide());
        this.#saveRun();
        const turn = this.#currentTurn();
        if (run.cancel_requested && !(turn && hasDispatched(turn))) {
          this.#append("run_failed", { error: { code: "cancelled", message: "The run was cancelled." } });
          return;
        }
        this.#kick();
      });
  }

  /**
   * The write-ahead protocol for a mutation (contract section 8): its intent,
   * no earlier identical call with an unknown outcome, the checkpoint
   * acknowledged, and only then the request; then the settlement. A read-only
   * call is simply sent.
   */
  async #execute(call: ToolCallRecord): Promise<() => Effect[]> {
    const run = this.#run!;
    if (call.mutation_id !== undefined) {
      const intent = await (this.#intents.get(call.tool_call_id) ?? this.#intentFor(run, call));
      this.#intents.delete(call.tool_call_id);
      if (intent !== "recorded") {
        // A row that is not ours must not be touched; ours is written once storage has room, and settled not_executed.
        if (intent === "unavailable") this.#settleUnsent(call, "storage_unavailable");
        return () => refuseDispatch(call, intent === "replay_blocked" ? "replay_blocked" : "storage_unavailable", Date.now());
      }
      const prior = await this.#ledger.priorUnknown({
        channelId: run.channel_id,
        toolName: call.tool_name,
        argumentsDigest: call.arguments_digest,
        excludeRunId: run.run_id,
      });
      const refusal =
        prior === true
          ? "prior_outcome_unknown"
          : prior === "unavailable"
            ? "storage_unavailable"
            : run.cancel_requested
              ? "cancelled"
              : undefined;
      if (refusal !== undefined) {
        this.#settleUnsent(call, refusal);
        return () => refuseDispatch(call, refusal, Date.now());
      }
      const checkpoint = await this.#ledger.checkpoint(call.mutation_id, {
        reason: "storage_unavailable",
        settledAt: new Date().toISOString(),
      });
      if (checkpoint !== "acknowledged") {
        this.#settleUnsent(call, "storage_unavailable");
        return () => refuseDispatch(call, "storage_unavailable", Date.now());
      }
      // Cancellation that arrived during the checkpoint still wins: nothing has been sent.
      if (run.cancel_requested) {
        this.#settleUnsent(call, "cancelled");
        return () => refuseDispatch(call, "cancelled", Date.now());
      }
    } else if (run.cancel_requested) {
      return () => refuseDispatch(call, "cancelled", Date.now());
    }
    const outcome = await this.#send(call);
    if (call.mutation_id === undefined) return () => settleDispatch(call, outcome, Date.now());
    const settled = await this.#ledger.settleDispatched(call.mutation_id, durableSettlement(outcome));
    return () => settleDispatch(call, outcome, Date.now(), settled === "late");
  }

  /**
   * The row of a call that was never sent: not_executed, with the reason the
   * stream gave. Its intent is written first if it never was (storage was
   * full when the call was approved), so the call still ends with a row.
   */
  #settleUnsent(call: ToolCallRecord, reason: string): void {
    if (!this.#run || call.mutation_id === undefined) return;
    this.#ledger.recordUnsentInBackground(this.#intentInput(this.#run, call), { reason, settledAt: new Date().toISOString() });
  }

  async #send(call: ToolCallRecord): Promise<DispatchOutcome> {
    const target = parseMcpToolName(call.tool_name);
    const server = target ? this.#config.MCP_SERVERS[target.server] : undefined;
    if (!target || !server) {
      return { kind: "failed", code: "transport_error", message: `No MCP server is configured for ${call.tool_name}.` };
    }
    // The approval was for these exact arguments; refuse anything else.
    if ((await argumentsDigest(call.arguments)) !== call.arguments_digest) {
      return { kind: "failed", code: "transport_error", message: "The arguments changed after approval; the call was not sent." };
    }
    const outcome = await callMcpTool(server, target.tool, call.arguments, this.#caps());
    if (outcome.kind === "failed") return { kind: "failed", code: outcome.code, message: outcome.message };
    return {
      kind: "result",
      is_error: outcome.isError,
      content_bytes: outcome.contentBytes,
      summary: outcome.summary,
      model_text: outcome.modelText,
    };
  }

  /**
   * Calls marked dispatched that this instance is not running were in flight
   * when the object restarted (eviction, deploy, crash). None is ever sent
   * again once it may have left: a mutation whose checkpoint landed settles
   * outcome_unknown; one whose checkpoint never landed was provably not sent,
   * so its pipeline simply starts over. A read-only call has no checkpoint and
   * is reported as an ambiguous failure.
   */
  async #recoverLostDispatches(calls: ToolCallRecord[]): Promise<void> {
    const lostMessage = "The engine restarted while this call was in flight; its outcome is unknown and it was not sent again.";
    for (const call of calls) {
      if (call.state !== "dispatched" || this.#inFlight.has(call.tool_call_id)) continue;
      if (call.mutation_id === undefined) {
        this.#apply(settleDispatch(call, { kind: "failed", code: "transport_error", message: lostMessage }, Date.now()));
        continue;
      }
      const row = await this.#ledger.read(call.mutation_id);
      if (call.state !== "dispatched" || this.#inFlight.has(call.tool_call_id)) continue; // handled while we read
      if (row === "unavailable") {
        // Try again after one storage bound; until then the call stays in flight.
        this.#deadlines.set("calls", Date.now() + this.#config.STORAGE_WAIT_MS);
        continue;
      }
      if (row === null || (row.dispatched === 0 && row.state === "unresolved")) {
        this.#dispatch(call);
        continue;
      }
      if (row.state === "unresolved") {
        this.#ledger.settleInBackground(call.mutation_id, {
          state: "outcome_unknown",
          error: { code: "transport_error", message: lostMessage },
          settledAt: new Date().toISOString(),
        });
      }
      this.#apply(settleDispatch(call, { kind: "failed", code: "transport_error", message: lostMessage }, Date.now()));
    }
  }

  async #toolInfo(toolName: string): Promise<McpToolInfo | undefined> {
    const target = parseMcpToolName(toolName);
    const server = target ? this.#config.MCP_SERVERS[target.server] : undefined;
    if (!target || !server) return undefined;
    return (await this.#toolList(target.server, server))?.find((t) => t.name === target.tool);
  }

  /** A server's tools, listed once per instance; a server that cannot list them leaves them unknown (and unknown means mutating). */
  #toolList(name: string, server: McpServerConfig): Promise<McpToolInfo[] | undefined> {
    let list = this.#toolLists.get(name);
    if (!list) {
      list = listMcpTools(server, this.#caps()).catch(() => undefined);
      this.#toolLists.set(name, list);
    }
    return list;
  }

  #limits(): Limits {
    const fromTrigger = this.#run?.max_tool_calls;
    return {
      ceiling:
        fromTrigger === null || fromTrigger === undefined
          ? this.#config.MAX_TOOL_CALLS
          : Math.min(this.#config.MAX_TOOL_CALLS, fromTrigger),
      budget: this.#config.MUTATION_BUDGET,
      approvalTimeoutMs: this.#config.APPROVAL_TIMEOUT_MS,
      admissionTimeoutMs: this.#config.ADMISSION_TIMEOUT_MS,
    };
  }

  #caps(): TransportCaps {
    return {
      connectTimeoutMs: this.#config.MCP_CONNECT_TIMEOUT_MS,
      callTimeoutMs: this.#config.MCP_CALL_TIMEOUT_MS,
      maxResponseBytes: this.#config.MCP_MAX_RESPONSE_BYTES,
    };
  }

  #failRun(code: string, message: string): void {
    console.error(`run ${this.#run?.run_id}: ${message}`);
    this.#append("run_failed", { error: { code, message } });
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
   * late alarm, a late dispatch result, a second cancel.
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

  #settleEnd(run: RunRecord, status: RunStatus, now: number): void {
    run.status = status;
    run.ended_at = new Date(now).toISOString();
    run.phase = { kind: "ended" };
    this.#saveRun();
    this.#deadlines.clear("turn");
    this.#deadlines.clear("calls");
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

  /** The calls of the turn being executed, while the loop is in its tools phase. */
  #currentTurn(): TurnState | undefined {
    const run = this.#run;
    if (run?.phase.kind !== "tools") return undefined;
    const turn = run.phase.turn;
    return { calls: run.calls.filter((c) => c.turn === turn) };
  }

  #armCallDeadline(): void {
    const turn = this.#currentTurn();
    const next = turn ? nextDeadline(turn) : undefined;
    if (next === undefined) this.#deadlines.clear("calls");
    else this.#deadlines.set("calls", next);
    this.#rearm();
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

/**
 * Resolves on the next macrotask. Storage and transport work started in the
 * same turn as an append holds back that turn's outgoing frames and answers;
 * starting it a turn later lets them leave first (measured under wrangler dev:
 * approval POST p50 52 → 10 ms, approval → tool_execution_started at the
 * subscriber p50 58 → 20 ms for a mutation).
 */
function afterThisTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** The durable row for a dispatched call: completed when the server answered, outcome_unknown otherwise. */
function durableSettlement(outcome: DispatchOutcome): Settlement {
  const settledAt = new Date().toISOString();
  if (outcome.kind === "failed") return { state: "outcome_unknown", error: { code: outcome.code, message: outcome.message }, settledAt };
  return {
    state: "completed",
    result: { is_error: outcome.is_error, content_bytes: outcome.content_bytes, summary: outcome.summary },
    settledAt,
  };
}

function notFound(what: string, id: string): RouteAnswer {
  return { status: 404, body: { error: "not_found", message: `No ${what} ${JSON.stringify(id)} in this run.` } };
}
