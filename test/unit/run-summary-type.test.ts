// One RunSummary (issue 28): the engine declares GET /runs/{run_id}'s answer
// once, with zod, in src/wire/run-summary.ts; the consumer client cannot
// import zod and keeps a plain type. These checks fail `npm run typecheck`
// (and the run) the moment the two drift apart, field by field.
import { describe, expect, expectTypeOf, it } from "vitest";
import type { RunSummary as EngineRunSummary } from "../../src/agent/run-record";
import type { RunSummary as ClientRunSummary } from "../../src/client/types";
import { type RunSummary as WireRunSummary, runSummarySchema } from "../../src/wire/run-summary";

describe("RunSummary is declared once", () => {
  it("the client's plain type equals the type the wire's schema infers", () => {
    expectTypeOf<ClientRunSummary>().toEqualTypeOf<WireRunSummary>();
    expectTypeOf<ClientRunSummary["pending_inputs"][number]>().toEqualTypeOf<WireRunSummary["pending_inputs"][number]>();
  });

  it("the run object's summary is the wire's type", () => {
    expectTypeOf<EngineRunSummary>().toEqualTypeOf<WireRunSummary>();
  });

  it("the schema accepts a summary as contract section 5 writes one, and refuses one without earliest_sequence", () => {
    const summary: ClientRunSummary = {
      run_id: "run_01",
      channel_id: "C1",
      status: "running",
      last_sequence: 4,
      earliest_sequence: 1,
      subscribers: 0,
      watchers: { sse: 0, websocket: 0 },
      pending_approvals: [
        { approval_id: "ap_1", tool_call_id: "call_1", tool_name: "mcp__demo__write", expires_at: "2026-12-01T10:05:00.000Z" },
      ],
      pending_inputs: [
        {
          tool_call_id: "call_2",
          question: "Which team?",
          expires_at: "2026-12-01T10:05:00.000Z",
          input_id: "call_2:1:team",
          requested_schema: { type: "object", properties: { team: { type: "string" } } },
        },
      ],
      created_at: "2026-12-01T10:00:00.000Z",
    };
    expect(runSummarySchema.parse(summary)).toEqual(summary);
    const { earliest_sequence: _dropped, ...older } = summary;
    expect(runSummarySchema.safeParse(older).success).toBe(false);
  });
});
