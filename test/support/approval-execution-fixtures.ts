// The producer fixtures (contract section 12): three examples generated
// through the real trigger, approval-decision and replay routes, each turned
// into a projection sibling consumers test against. This module holds both
// halves: the normaliser (identities to run-1, approval-1, mutation-1, ...;
// heartbeats dropped and their sequence offsets removed; lifecycle events and
// fields selected; gaps left where other events were omitted) and the
// generator that runs the examples against a served Worker.
import { EngineClient, type ScriptTurn } from "../../src/client";
import { PROJECTION_EVENT_TYPES, PROJECTION_FIELDS } from "../../src/wire/event-schemas";

const FIXTURE_SCHEMA = "approved_execution_v2_fixtures/v1";

/**
 * The events a consumer of the approval lifecycle reads (the others leave sequence gaps) and the
 * fields kept of them, in this order: declared once, beside the projection's schema.
 */
const LIFECYCLE_TYPES: ReadonlySet<string> = new Set(PROJECTION_EVENT_TYPES);
const LIFECYCLE_FIELDS = PROJECTION_FIELDS;

type Json = Record<string, any>;

/** Maps server-made identities to stable names, numbered by first appearance. */
class IdentityMap {
  readonly #names = new Map<string, string>();
  readonly #counters = new Map<string, number>();

  name(kind: "run" | "approval" | "mutation", id: string | null | undefined): string | null | undefined {
    if (id === null || id === undefined || id === "") return id;
    let name = this.#names.get(id);
    if (!name) {
      const n = (this.#counters.get(kind) ?? 0) + 1;
      this.#counters.set(kind, n);
      name = `${kind}-${n}`;
      this.#names.set(id, name);
    }
    return name;
  }
}

function pick(source: Json, keys: readonly string[]): Json {
  const out: Json = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

/** Normalises one example's events and durable rows. */
function normaliseExample(events: Json[], mutations: Json[]): { events: Json[]; mutation_outcomes: Json[] } {
  const ids = new IdentityMap();
  let heartbeats = 0;
  const projected: Json[] = [];
  for (const event of events) {
    if (event.type === "heartbeat") {
      heartbeats += 1;
      continue;
    }
    if (!LIFECYCLE_TYPES.has(event.type)) continue;
    const kept = pick(event, LIFECYCLE_FIELDS);
    kept.sequence = event.sequence - heartbeats;
    kept.run_id = ids.name("run", event.run_id);
    if ("approval_id" in kept) kept.approval_id = ids.name("approval", kept.approval_id);
    if ("mutation_id" in kept) kept.mutation_id = ids.name("mutation", kept.mutation_id);
    // Result facts only: the summary carries the tool's own text (timestamps, ids).
    if (kept.result) kept.result = pick(kept.result, ["is_error"]);
    if (kept.error) kept.error = pick(kept.error, ["code"]);
    projected.push(kept);
  }
  const outcomes = mutations.map((row) => {
    const out: Json = { ...row };
    out.mutation_id = ids.name("mutation", row.mutation_id);
    out.run_id = ids.name("run", row.run_id);
    out.approval_id = ids.name("approval", row.approval_id);
    out.created_at = "<created_at>";
    if (out.approved_at !== null) out.approved_at = "<approved_at>";
    // The votes (contract section 19) name principals and times: a fixture keeps approved_by alone.
    delete out.approvals;
    // The tool's digest (contract section 23) covers the demo server's url, whose port changes from run to run.
    delete out.tool_digest;
    // Section 23's row fields name principals and times: a fixture leaves them out.
    for (const key of ["dispatched_at", "server", "requested_by", "on_behalf_of", "requester_person"]) delete out[key];
    // Section 24's policy version and hash depend on the test server's settings: a fixture leaves them out too.
    delete out.policy_version;
    delete out.policy_hash;
    if ("settled_at" in out) out.settled_at = "<settled_at>";
    if (out.result) out.result = pick(out.result, ["is_error"]);
    if (out.error) out.error = pick(out.error, ["code"]);
    return out;
  });
  return { events: projected, mutation_outcomes: outcomes };
}

// ---- the generator ----------------------------------------------------------

export interface FixtureTarget {
  workerUrl: string;
  token: string;
  /** The demo MCP server's control API (faults, reset). */
  demoBaseUrl: string;
}

const CREATE = "mcp__demo__create_dashboard";

interface Example {
  name: "success" | "pre_dispatch_expiry" | "dispatched_timeout";
  description: string;
  script: ScriptTurn[];
  /** What the person does once the approval is asked. */
  prepare?: (demoBaseUrl: string) => Promise<void>;
}

const EXAMPLES: Example[] = [
  {
    name: "success",
    description: "A person approves a dashboard creation; it runs, the server answers, the outcome is recorded completed.",
    script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Fixture success" } }] }],
  },
  {
    name: "pre_dispatch_expiry",
    description:
      "A person approves the write, but it waits (ordered admission) behind an earlier human__ask nobody answers, and its admission deadline passes before dispatch: not executed, durable not_executed.",
    script: [
      {
        tool_calls: [
          { tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team owns it?" } },
          { tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Fixture expiry" } },
        ],
      },
    ],
  },
  {
    name: "dispatched_timeout",
    description:
      "A person approves the write; it is dispatched and the server does not answer within the call timeout: executed with transport_timeout, durable outcome_unknown, never retried.",
    script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "write-1", arguments: { title: "Fixture timeout" } }] }],
    prepare: async (demo) => {
      const res = await fetch(`${demo}/control/faults`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ tool: "create_dashboard", mode: "delay", delay_ms: 2_500 }),
      });
      if (!res.ok) throw new Error(`arming the delay fault failed: ${res.status}`);
    },
  },
];

async function runExample(target: FixtureTarget, example: Example): Promise<{ events: Json[]; mutations: Json[] }> {
  const engine = new EngineClient({ baseUrl: target.workerUrl, token: target.token });
  await fetch(`${target.demoBaseUrl}/control/reset`, { method: "POST" });
  await example.prepare?.(target.demoBaseUrl);
  // The trigger route, then the approval-decision route.
  const { run_id } = await engine.trigger({
    message: `fixture: ${example.name}`,
    channel_id: "C1",
    script: example.script,
  });
  let asked = false;
  for await (const event of engine.events(run_id)) {
    if (event.type !== "approval_requested") continue;
    await engine.decideApproval(run_id, event.approval_id, { decision: "approve" });
    asked = true;
  }
  if (!asked) throw new Error(`${example.name}: the run ended without asking for approval`);
  // The replay route: the fixture is what a client rejoining from sequence 0 gets.
  const events: Json[] = [];
  for await (const event of engine.events(run_id, { after: 0 })) events.push(event);
  // Durable rows may settle just after the terminal event: wait until none is unresolved.
  for (let attempt = 0; ; attempt++) {
    const { mutations } = await engine.runMutations(run_id);
    if (mutations.every((m) => m.state !== "unresolved") || attempt >= 50) return { events, mutations: mutations as Json[] };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the three examples in order and returns the fixture document. */
export async function generateFixtures(target: FixtureTarget): Promise<Json> {
  const examples: Json = {};
  for (const example of EXAMPLES) {
    const { events, mutations } = await runExample(target, example);
    examples[example.name] = { description: example.description, ...normaliseExample(events, mutations) };
  }
  return {
    schema: FIXTURE_SCHEMA,
    protocol_version: "v2",
    generated_by: "npm run fixtures (test/support/approval-execution-fixtures.ts)",
    notes:
      "Projections, not SSE transcripts: identities normalised, heartbeats removed with their sequence offsets, only lifecycle events and fields kept; sequence gaps mark omitted events (run_started, assistant_message).",
    examples,
  };
}

export function serialiseFixtures(document: Json): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
