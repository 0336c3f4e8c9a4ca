// What the CLI's `pending` prints of the inputs listing (cli/render.ts): a
// human__ask question by its tool_call_id, and an MCP tool's question mid-call
// (contract section 21) by its input_id with its call and form, as the line
// of one run's summary shows it, so `answer <run> <input_id>` takes it as printed.
import { describe, expect, it } from "vitest";
import { inputLine, summaryPendingLines } from "../../cli/render";

const listed = {
  run_id: "run-1",
  channel_id: "C1",
  question: 'Create the note "x"?',
  requested_at: "2026-12-01T10:00:00.000Z",
  expires_at: "2026-12-01T10:05:00.000Z",
  status: "pending" as const,
};

describe("the CLI's lines for listed questions", () => {
  it("prints a human__ask question by its tool_call_id and an MCP question by its input_id, call and schema", () => {
    expect(inputLine({ ...listed, tool_call_id: "ask-1" })).toBe(
      'question ask-1 run=run-1 "Create the note \\"x\\"?" expires=2026-12-01T10:05:00.000Z',
    );
    const schema = { type: "object", properties: { confirm: { type: "boolean" } } };
    const mcp = { ...listed, tool_call_id: "note-1", input_id: "note-1:1:confirm", requested_schema: schema };
    expect(inputLine(mcp)).toBe(
      `question note-1:1:confirm run=run-1 call=note-1 "Create the note \\"x\\"?" schema=${JSON.stringify(schema)} expires=2026-12-01T10:05:00.000Z`,
    );
    // The same line as `pending --run` prints from the run's summary.
    const [fromSummary] = summaryPendingLines({
      run_id: "run-1",
      pending_approvals: [],
      pending_inputs: [
        {
          tool_call_id: "note-1",
          question: listed.question,
          expires_at: listed.expires_at,
          input_id: mcp.input_id,
          requested_schema: schema,
        },
      ],
    } as unknown as Parameters<typeof summaryPendingLines>[0]);
    expect(inputLine(mcp)).toBe(fromSummary);
  });
});
