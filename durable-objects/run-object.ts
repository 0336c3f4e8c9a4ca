// RunObject: one Durable Object per run, the only writer of the run's events.
// A thin shell that persists, schedules and delegates: it builds the run's
// parts over its SQLite storage and its alarm (the stream in src/stream, the
// alarm schedule in src/schedule, the agent loop and model source in
// src/agent, the dispatch pipeline with the outcome ledger and the MCP sender
// in src/execution and src/outcomes, the policy version in src/agent/run-policy.ts) and hands every RPC, watcher
// socket (section 27) and alarm to them; the D1 run index and Slack outbox hang off the append path (src/agent/run-outputs.ts).
// Until `start`, it creates nothing: a request for a run that never existed
// leaves no storage behind.
import { DurableObject } from "cloudflare:workers";
import { ProviderSource, ScriptedSource, type ModelSource } from "../src/agent/model-source";
import { RunEngine } from "../src/agent/run-engine";
import { newRunRecord, type RunRecord, type RunSummary, type StartRunInput } from "../src/agent/run-record";
import { RunStore } from "../src/agent/run-store";
import { Conversation, earlierThreadTurns, threadTurns } from "../src/agent/conversation-log";
import { flushLeftoverMarks, RunOutputs } from "../src/agent/run-outputs";
import { wakeSealer } from "../src/audit/wake-sealer";
import { requestPreview } from "../src/listings/run-index";
import { loadConfig, type HostConfig } from "../src/config/config";
import type { Env } from "../src/config/env";
import { recordMcpContact, type McpContactSink } from "../src/execution/mcp-contacts";
import { openMcpCall } from "../src/execution/mcp-send";
import { oauthAuthorization } from "../src/mcp-oauth/server-access";
import { ToolCatalog } from "../src/execution/tool-catalog";
import type { ToolCall } from "../src/execution/tool-calls";
import type { ActionOrigin, ActionVerdict, PersonAction } from "../src/wire/run-protocol";
import type { ScriptTurn } from "../src/http/trigger-request";
import { MutationLedger } from "../src/outcomes/mutation-ledger";
import type { HaltsAndPolicy } from "../src/agent/run-rpc";
import { RunPolicy } from "../src/agent/run-policy";
import { limitBeforeAsking } from "../src/outcomes/mutation-limits";
import { RowOutbox } from "../src/outcomes/row-outbox";
import type { OutcomeDb } from "../src/outcomes/mutation-outcomes";
import { observeSends, observeTurns } from "../src/operate/run-hooks";
import { traceparentOf } from "../src/operate/trace-ids";
import { mcpSpanKey } from "../src/operate/trace-spans";
import { globalStoragePool } from "../src/outcomes/storage-pool-rpc";
import { type ConversationItem, modelProviderFromConfig } from "../src/providers/model-provider";
import { AlarmSchedule } from "../src/schedule/alarm-schedule";
import type { EventType, StoredEvent } from "../src/wire/events";
import type { EventFields } from "../src/wire/event-schemas";
import { RunStream } from "../src/stream/run-stream";
import { WatcherSockets } from "../src/stream/watcher-sockets";
import { serveEventsRequest } from "../src/stream/watch-request";
import { streamCredentialLive } from "../src/auth/stream-credential";

/** The parts of a live run the object itself talks to (beside the engine). */
interface RunParts {
  engine: RunEngine;
  outputs: RunOutputs;
  /** The run's D1 row writes; what it could not write yet is kept in storage and retried from the alarm. */
  ledger: MutationLedger;
  /** Set for a run on a real model: the conversation it sends. */
  conversation: Conversation | undefined;
}

export class RunObject extends DurableObject<Env> {
  #config!: HostConfig;
  #policy!: RunPolicy; // the policy version the run's checks use (contract section 24)
  #engine: RunEngine | undefined;
  #parts: RunParts | undefined;
  /** After retention: the stream's purge marker only, answering 410 replay_gap or 204. */
  #purged: RunStream | undefined;
  readonly #catalog: () => ToolCatalog;
  /** The watchers on hibernatable sockets; they outlive this instance (contract section 27). */
  #sockets!: WatcherSockets;
  /** Each MCP contact, recorded in D1 without holding up the run (GET /api/mcp/servers). */
  readonly #contacts: McpContactSink = (server, contact) => {
    this.ctx.waitUntil(recordMcpContact(this.env.DB, server, contact));
  };

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    let catalog: ToolCatalog | undefined;
    this.#catalog = () => (catalog ??= new ToolCatalog(this.#config, this.#contacts, oauthAuthorization(env.DB, this.#config)));
    void ctx.blockConcurrencyWhile(async () => {
      const loaded = loadConfig(env);
      if (loaded.state === "bad_config") {
        // The Worker answers 503 before ever reaching a run; this guards direct callers.
        throw new Error(`RunObject cannot start: ${loaded.message}`);
      }
      this.#config = loaded.config;
      this.#policy = await RunPolicy.load(() => this.outcomeDb(), this.#config);
      this.#sockets = new WatcherSockets(ctx, {
        maxAgeMs: this.#config.STREAM_MAX_SECONDS * 1000,
        recheckMs: this.#config.HEARTBEAT_INTERVAL_MS,
        isLive: (credential) => streamCredentialLive(env.DB, credential, new Date()),
        waitUntil: (promise) => ctx.waitUntil(promise),
      });
      const found = RunStore.load(ctx.storage.sql);
      if (!found) {
        const purged = RunStore.purged(ctx.storage.sql);
        if (purged) this.#purged = new RunStream(ctx.storage.sql, this.#config.RUN_MAX_EVENTS, purged, true).useSockets(this.#sockets);
        return;
      }
      const { run, script, calls } = found.stored;
      this.#parts = this.#build(found.store, run, script, calls, await ctx.storage.getAlarm(), "");
      this.#engine = this.#parts.engine;
      this.#engine.resume();
      // Row writes an earlier instance could not finish (it was unloaded, or D1 had no room) go now.
      ctx.waitUntil(this.#parts.ledger.drain());
    });
  }

  /**
   * Where outcome rows are written: D1. The runtime tests' entry
   * (test/runtime/test-worker.ts) overrides it to put a fault seam in front.
   */
  protected outcomeDb(): OutcomeDb {
    return this.env.DB;
  }

  // ---- RPC surface used by the Worker ------------------------------------

  /** Starts the run once; a second start (duplicate delivery) changes nothing. */
  async start(input: StartRunInput, origin?: ActionOrigin): Promise<{ created: boolean }> {
    if (this.#engine || this.#purged) return { created: false };
    // A Slack thread follow-up: the thread's earlier turns, from the thread's latest run (contract section 14).
    const previous = input.slack?.previous_run_id;
    const earlier =
      previous !== undefined && modelProviderFromConfig(this.#config)
        ? await earlierThreadTurns(() => this.env.RUN_OBJECT.get(this.env.RUN_OBJECT.idFromName(previous)).threadTurns(), previous)
        : [];
    if (this.#engine) return { created: false }; // a duplicate start got here while the earlier turns were read
    const now = Date.now();
    const scripted = new ScriptedSource(input.script, input.message);
    const script = [...scripted.script];
    const run = newRunRecord(input, now, now + scripted.delayMs(0), requestPreview(input.message));
    const store = RunStore.create(this.ctx.storage.sql, run, script);
    this.#parts = this.#build(store, run, script, [], null, input.message);
    this.#engine = this.#parts.engine;
    for (const item of earlier) this.#parts.conversation?.append(item);
    // Contract section 25: run.trigger records where the trigger came from (via, client_ip), as a person's action does.
    this.#parts.outputs.actingFrom(origin, () => this.#engine?.start(input.message));
    return { created: true };
  }

  /**
   * The run's turns as a later run in the same Slack thread continues them:
   * the people's messages and the app's answers, for as long as this run keeps
   * its events (after retention, none). A run on the scripted provider has none.
   */
  async threadTurns(): Promise<ConversationItem[]> {
    const conversation = this.#parts?.conversation;
    return conversation ? threadTurns(conversation.items()) : [];
  }

  async summary(): Promise<RunSummary | null> {
    return this.#engine?.summary() ?? null;
  }

  /**
   * A person's action (the run protocol, src/wire/run-protocol.ts), judged by the run and
   * answered with one verdict; `gone` for a run that never started or was purged. An accepted
   * cancel is audited through the index's marks (contract section 18).
   */
  async act(action: PersonAction, read?: HaltsAndPolicy, given?: ActionOrigin): Promise<ActionVerdict> {
    const parts = this.#parts;
    if (!parts) return { kind: "gone" };
    // Sections 23-25: an approve or accept reads the halts from D1 uncached, every decision the policy pointer; entries record the origin.
    const halts = await this.#policy.forAction(action, this.#config.STORAGE_WAIT_MS, read);
    const origin = given ?? { via: action.actor.via };
    const verdict = parts.outputs.actingFrom(origin, () => parts.engine.act(action, halts));
    if (verdict.kind === "cancel" && verdict.result.found && !verdict.result.already_ended) {
      parts.outputs.auditCancel(action.actor.principal_id, origin, Date.now());
    }
    return verdict;
  }

  /** The events route, `after` and the credential checked by the Worker: a watcher's socket, or an SSE response held here. */
  override async fetch(request: Request): Promise<Response> {
    return serveEventsRequest(request, this.#purged ?? this.#engine);
  }

  /** A client's message: `ping` is answered by the runtime and never gets here; anything else closes with 1008. */
  override async webSocketMessage(ws: WebSocket): Promise<void> {
    this.#sockets.message(ws);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.#sockets.closed(ws, code);
  }

  override async alarm(): Promise<void> {
    const now = Date.now();
    const parts = this.#parts;
    if (!parts) {
      // After retention only index marks D1 has not taken yet may remain.
      if (this.#purged) await this.#flushLeftovers(now);
      return;
    }
    const { engine, outputs, ledger } = parts;
    // The engine's step first (only one due for a voted approval waits for a bounded D1 read), then the index flush and the outboxes.
    const { purge } = engine.alarm(now, await engine.alarmChecks(now));
    this.ctx.waitUntil(ledger.drain());
    if (!purge || !outputs.mayPurge(now)) {
      outputs.afterAlarm(now);
      return;
    }
    // Retention ended: the events, the real arguments, the script, the conversation, the outbox and the record all go.
    engine.closeStream();
    outputs.purge();
    RunStore.purge(this.ctx.storage.sql, engine.run);
    this.#engine = undefined;
    this.#parts = undefined;
    await this.ctx.storage.deleteAlarm();
    await RunStore.scrub(this.ctx.storage.sql, this.ctx.storage);
    this.#purged = new RunStream(this.ctx.storage.sql, this.#config.RUN_MAX_EVENTS, engine.run, true).useSockets(this.#sockets);
    // The index marks outlive the events: the run stays listed after retention.
    await this.#flushLeftovers(now);
  }

  async #flushLeftovers(now: number): Promise<void> {
    const identity = RunStore.purged(this.ctx.storage.sql);
    const again = await flushLeftoverMarks(this.ctx.storage.sql, this.env.DB, identity?.run_id ?? "(purged)", now);
    if (again !== null) await this.ctx.storage.setAlarm(again);
  }

  /**
   * The append path for subclasses (the benchmark's object appends synthetic
   * events through exactly the code path real events take).
   */
  protected appendEvent<T extends EventType>(type: T, fields: EventFields<T>): StoredEvent | null {
    return this.#engine?.append(type, fields) ?? null;
  }

  /** The run's parts over this object's storage; `message` only matters for a run without a script. */
  #build(store: RunStore, run: RunRecord, script: ScriptTurn[], calls: ToolCall[], armedAt: number | null, message: string): RunParts {
    const config = this.#config;
    const sql = this.ctx.storage.sql;
    const terminal = run.lifecycle.status !== "running";
    const stream = new RunStream(sql, config.RUN_MAX_EVENTS, run, terminal).useSockets(this.#sockets);
    let engine: RunEngine | undefined;
    const schedule = new AlarmSchedule(sql, this.ctx.storage, armedAt, () => engine?.streamDueAt());
    const provider = modelProviderFromConfig(config);
    const catalog = this.#catalog();
    const conversation = provider ? new Conversation(sql) : undefined;
    const model: ModelSource =
      provider && conversation
        ? new ProviderSource(provider, conversation, catalog, config.SYSTEM_PROMPT)
        : new ScriptedSource(script, message);
    const outputs = new RunOutputs(
      {
        sql,
        config,
        db: this.env.DB,
        schedule,
        waitUntil: (promise) => this.ctx.waitUntil(promise),
        stillPending: () => engine?.summary() ?? { pending_approvals: [], pending_inputs: [] },
        toolNameOf: (toolCallId) => engine?.toolNameOf(toolCallId),
        callOf: (toolCallId) => engine?.callOf(toolCallId),
        mutationsUsed: (toolName) => engine?.mutationsUsed(toolName) ?? 0,
        auditWritten: () => this.ctx.waitUntil(wakeSealer(this.env)),
      },
      run,
    );
    const source = observeTurns(model, {
      started: (index) => outputs.turnStarted(index, Date.now()),
      ended: (index, ok) => outputs.turnEnded(index, ok, Date.now()),
    });
    const authorization = oauthAuthorization(this.env.DB, config);
    const ledger = new MutationLedger(() => this.outcomeDb(), globalStoragePool(this.env.STORAGE_POOL), config.STORAGE_WAIT_MS, {
      outbox: new RowOutbox(sql),
      wake: (at) => schedule.set("rows", at),
    });
    engine = new RunEngine(
      {
        config,
        store,
        stream,
        schedule,
        ledger,
        // Each tools/call carries the run's trace context when tracing is on (contract section 22).
        open: observeSends(
          (call) =>
            openMcpCall(
              config,
              call,
              outputs.tracing ? traceparentOf(run.run_id, mcpSpanKey(call.tool_call_id)) : undefined,
              this.#contacts,
              authorization,
            ),
          {
            sent: (toolCallId) => outputs.toolCallSent(toolCallId, Date.now()),
            answered: (toolCallId, outcome) => outputs.toolCallAnswered(toolCallId, outcome, Date.now()),
          },
        ),
        source,
        catalog,
        observer: outputs,
        policy: this.#policy,
        halts: () => this.#policy.halts(config.STORAGE_WAIT_MS),
        limitRoom: (limits, call) => limitBeforeAsking(this.outcomeDb(), config.STORAGE_WAIT_MS, limits, call),
      },
      run,
      calls,
    );
    return { engine, outputs, ledger, conversation };
  }
}
