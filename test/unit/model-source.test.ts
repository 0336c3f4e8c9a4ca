// Model sources (src/agent/model-source.ts): the scripted player's turns and
// delays, and a real model's repeated tool_call_ids renamed within a turn.
import { describe, expect, it } from "vitest";
import { type ModelSource, ScriptedSource, uniqueIds } from "../../src/agent/model-source";

describe("ScriptedSource", () => {
  it("plays the script turn by turn with its delays, then says it is finished", async () => {
    const source: ModelSource = new ScriptedSource(
      [{ text: "a", delay_ms: 40 }, { tool_calls: [{ tool_name: "human__ask", arguments: {} }] }],
      "m",
    );
    const signal = new AbortController().signal;
    expect([source.delayMs(0), source.delayMs(1), source.delayMs(2)]).toEqual([40, 0, 0]);
    expect(await source.next(0, signal)).toEqual({ kind: "turn", text: "a", tool_calls: [], final: false });
    expect(await source.next(1, signal)).toMatchObject({ kind: "turn", tool_calls: [{ tool_name: "human__ask" }] });
    expect(await source.next(2, signal)).toEqual({ kind: "finished" });
  });

  it("echoes the message when there is no script", async () => {
    const echo: ModelSource = new ScriptedSource(null, "hi");
    expect(await echo.next(0, new AbortController().signal)).toMatchObject({ text: "You said: hi" });
  });
});

describe("uniqueIds", () => {
  it("renames a real model's repeated tool_call_ids within one turn and keeps the rest", () => {
    const call = (id: string) => ({ tool_call_id: id, tool_name: "t", arguments: {} });
    expect(uniqueIds([call("a"), call("b"), call("a"), call("a"), call("a_2")]).map((c) => c.tool_call_id)).toEqual([
      "a",
      "b",
      "a_2",
      "a_3",
      "a_2_2",
    ]);
  });
});
