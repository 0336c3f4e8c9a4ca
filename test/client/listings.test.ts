// The client's listing methods and page walker (contract section 15) against
// the real Worker under wrangler dev: GET /api/mutations with its filters and
// cursors across pages (rows made by real approved runs in a channel of this
// test's own), the other listings' envelopes and the server's validation of
// the queries the client sends, and GET /api/openapi.json.
import { describe, expect, it } from "vitest";
import { ApiError, CursorLoopError, type MutationOutcome, walkPages } from "../../src/client";
import { CREATE, engine, Scenario, UPDATE } from "../support/e2e-client";

/** A channel no other test writes to, so its rows are exactly the ones made here. */
const CHANNEL = `C-listings-${Date.now().toString(36)}`;

/** One run in CHANNEL whose two writes are approved and completed: two durable rows. */
async function twoApprovedWrites(tag: string): Promise<string> {
  const s = await Scenario.start(
    [
      {
        tool_calls: [
          { tool_name: CREATE, tool_call_id: `create-${tag}`, arguments: { title: `listing ${tag}` } },
          { tool_name: UPDATE, tool_call_id: `update-${tag}`, arguments: { dashboard_id: "dash-1", title: `listing ${tag}'` } },
        ],
      },
      { text: "done" },
    ],
    { channel_id: CHANNEL },
  );
  await s.approve(`create-${tag}`);
  await s.approve(`update-${tag}`);
  await s.toEnd();
  return s.runId;
}

describe("listings through the client", () => {
  it("walks GET /api/mutations page by page with its filters, and pages() / items() agree with the pages", async () => {
    const runs = [await twoApprovedWrites("a"), await twoApprovedWrites("b")];

    // One page at a time, by hand: 3 + 1 rows, newest first, the cursor handed back unchanged.
    const first = await engine.listMutations({ channel_id: CHANNEL, limit: 3 });
    expect(first.mutations).toHaveLength(3);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await engine.listMutations({ channel_id: CHANNEL, limit: 3, cursor: first.next_cursor! });
    expect(second.mutations).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
    const byHand = [...first.mutations, ...second.mutations];
    expect(new Set(byHand.map((m) => m.mutation_id)).size).toBe(4);
    expect(new Set(byHand.map((m) => m.run_id))).toEqual(new Set(runs));
    for (const row of byHand) {
      expect(row).toMatchObject({ schema: "mutation_outcome/v1", channel_id: CHANNEL, state: "completed" });
    }

    // The walker follows the same cursors: two pages of limit 3, and the same rows in the same order.
    const pages = [];
    for await (const page of engine.pages("mutations", { channel_id: CHANNEL, limit: 3 })) pages.push(page);
    expect(pages.map((p) => p.mutations.length)).toEqual([3, 1]);
    const items: MutationOutcome[] = [];
    for await (const row of engine.items("mutations", { channel_id: CHANNEL, limit: 2 })) items.push(row);
    expect(items.map((m) => m.mutation_id)).toEqual(byHand.map((m) => m.mutation_id));

    // The state filter reaches the server: nothing in this channel is unknown, everything is completed.
    expect((await engine.listMutations({ channel_id: CHANNEL, state: "outcome_unknown" })).mutations).toEqual([]);
    expect((await engine.listMutations({ channel_id: CHANNEL, state: "completed" })).mutations).toHaveLength(4);
    // maxPages stops early.
    const capped = [];
    for await (const row of engine.items("mutations", { channel_id: CHANNEL, limit: 1 }, { maxPages: 2 })) capped.push(row);
    expect(capped.map((m) => m.mutation_id)).toEqual(byHand.slice(0, 2).map((m) => m.mutation_id));
  });

  it("sends each listing's query as the server validates it, and answers the section's envelopes", async () => {
    const runs = await engine.listRuns({ channel_id: CHANNEL, status: "completed", limit: 5 });
    expect(Object.keys(runs).sort()).toEqual(["next_cursor", "runs"]);
    expect(Array.isArray(runs.runs)).toBe(true);
    const approvals = await engine.listApprovals({ status: "pending", limit: 200 });
    expect(Object.keys(approvals).sort()).toEqual(["approvals", "next_cursor"]);
    const inputs = await engine.listInputs({ status: "answered" });
    expect(Object.keys(inputs).sort()).toEqual(["inputs", "next_cursor"]);

    // Out-of-range values are refused by the server, which proves the client sent them.
    const refusals = await Promise.all([
      engine.listRuns({ limit: 0 }).catch((e: unknown) => e),
      engine.listApprovals({ limit: 201 }).catch((e: unknown) => e),
      engine.listInputs({ status: "nope" as "pending" }).catch((e: unknown) => e),
      engine.listMutations({ state: "nope" as "completed" }).catch((e: unknown) => e),
      engine.listMutations({ cursor: "not-a-cursor-of-ours" }).catch((e: unknown) => e),
    ]);
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(ApiError);
      expect(refusal).toMatchObject({ status: 400, code: "invalid_request" });
    }
    expect(JSON.stringify((refusals[0] as ApiError).details)).toContain("limit");
    expect(JSON.stringify((refusals[4] as ApiError).details)).toContain("cursor");
  });

  it("reads the OpenAPI 3.1 document with every listing route in it", async () => {
    const doc = await engine.openapi();
    expect(doc.openapi).toMatch(/^3\.1\./);
    for (const path of ["/api/runs", "/api/approvals", "/api/inputs", "/api/mutations", "/api/openapi.json", "/api/trigger"]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
  });

  it("refuses to walk a cursor it was given before (a server loop)", async () => {
    let calls = 0;
    const looping = walkPages(async () => {
      calls++;
      return { items: [calls], next_cursor: "same" };
    }, {});
    const seen: number[][] = [];
    const failure = await (async () => {
      for await (const page of looping) seen.push(page.items);
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(CursorLoopError);
    expect(seen).toEqual([[1], [2]]);
  });
});
