// The console's pages in real headless Chromium (contract sections 16 and
// 20): the hash router renders for any fragment without an uncaught error,
// a run's page is one timeline in event order with outcome states in their
// own words and colours, an unknown run is "not found", and the runs list and
// the navigation show what waits on a person.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { EngineClient, type ScriptTurn } from "../../src/client";
import {
  type ConsoleBrowser,
  type ConsoleStack,
  launchConsoleBrowser,
  signIn,
  startConsoleStack,
  waitForSummary,
} from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
const LIST = "mcp__demo__list_dashboards";
const NAME = "lin";
/** A secret-looking value in the person's own message: the request shown must have it redacted. */
const MESSAGE_SECRET = `sk-live-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

let stack: ConsoleStack;
let browser: ConsoleBrowser;
let page: Page;
let engine: EngineClient;
/** Uncaught exceptions of the page (the console must never throw one). */
const pageErrors: Error[] = [];

const consoleUrl = (hash = "") => `${stack.server.url}/console${hash}`;

async function trigger(message: string, script: ScriptTurn[], channel = "C-pages"): Promise<string> {
  return (await engine.trigger({ message, channel_id: channel, script })).run_id;
}

async function approve(runId: string, toolCallId: string): Promise<void> {
  const approval = await waitForSummary(
    engine,
    runId,
    (s) => s.pending_approvals.find((a) => a.tool_call_id === toolCallId),
    UI_TIMEOUT_MS,
  );
  await engine.decideApproval(runId, approval.approval_id, { decision: "approve", decided_by: "test" });
}

async function toEnd(runId: string): Promise<void> {
  for await (const _ of engine.events(runId)) {
    // to the terminal event
  }
}

async function openRun(runId: string) {
  await page.goto(consoleUrl(`#/runs/${runId}`));
  await page.getByRole("heading", { name: new RegExp(`Run ${runId}`) }).waitFor({ timeout: UI_TIMEOUT_MS });
}

/** The kinds of the timeline's entries, top to bottom, with the sequences they stand at. */
async function timeline(): Promise<{ kind: string; sequence: number; id?: string }[]> {
  return page.locator("ol.timeline > li").evaluateAll((items) =>
    items.map((li) => ({
      kind: li.getAttribute("data-kind") ?? "",
      sequence: Number(li.getAttribute("data-sequence")),
      ...(li.getAttribute("data-tool-call-id") ? { id: li.getAttribute("data-tool-call-id")! } : {}),
    })),
  );
}

/** The card's left border colour and the page's colour for a tone, as the browser computed them. */
async function colours(selector: string, variable: string): Promise<{ border: string; expected: string }> {
  return page.evaluate(
    ([sel, v]) => {
      const probe = document.createElement("span");
      probe.style.color = `var(${v})`;
      document.body.append(probe);
      const expected = getComputedStyle(probe).color;
      probe.remove();
      const el = document.querySelector(sel);
      return { border: el ? getComputedStyle(el).borderLeftColor : "(missing)", expected };
    },
    [selector, variable] as const,
  );
}

beforeAll(async () => {
  stack = await startConsoleStack();
  engine = new EngineClient({ baseUrl: stack.server.url, token: stack.server.token });
  browser = await launchConsoleBrowser();
  page = browser.page;
  page.on("pageerror", (err) => pageErrors.push(err));
  await signIn(page, stack.server.url, stack.server.token, NAME);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.sequential("the console's pages in Chromium", () => {
  it("renders for any fragment: a malformed escape, an unknown page, and then a real page, with no uncaught error", async () => {
    await page.goto(consoleUrl("#/runs/%E0%A4%A"));
    await page.getByRole("heading", { name: /Run %E0%A4%A/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    await page.goto(consoleUrl("#/%E0%A4%A/%"));
    await page.getByRole("heading", { name: "No such page" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await page.locator("main").innerText()).toContain("#%E0%A4%A/%");
    await page.goto(consoleUrl("#/runs"));
    await page.getByRole("heading", { name: "Runs" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(pageErrors).toEqual([]);
  });

  it("shows a run id the engine does not know as not found: no running status, no Cancel button", async () => {
    await page.goto(consoleUrl("#/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV"));
    await page.getByRole("heading", { name: /not found/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    const main = await page.locator("main").innerText();
    expect(main).not.toMatch(/running/i);
    expect(await page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });

  it("shows one timeline in event order: the request (redacted), each message and each call where it happened, the final answer once", async () => {
    const runId = await trigger(`from the pages test: look, then create (key ${MESSAGE_SECRET})`, [
      { text: "First I look at what exists." },
      { tool_calls: [{ tool_name: LIST, tool_call_id: "look-1", arguments: {} }] },
      { text: "Now I create the dashboard." },
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "make-1", arguments: { title: `timeline-${Date.now()}` } }] },
      { text: "All done: one dashboard." },
    ]);
    await approve(runId, "make-1");
    await toEnd(runId);
    await openRun(runId);
    await expect.poll(() => page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
    const entries = await timeline();
    expect(entries.map((e) => e.id ?? e.kind)).toEqual(["request", "message", "look-1", "message", "make-1", "final"]);
    const sequences = entries.slice(1).map((e) => e.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    const text = await page.locator("main").innerText();
    expect(text).toContain("from the pages test: look, then create");
    expect(text).toContain("api asked");
    expect(text).not.toContain(MESSAGE_SECRET);
    expect(text.split("All done: one dashboard.").length - 1).toBe(1);
    expect(await page.locator('li[data-kind="final"]').innerText()).toContain("Final answer");
    // Success in green: a read that returned, and a mutation whose durable outcome is completed.
    await expect
      .poll(() => page.locator('li.card[data-tool-call-id="make-1"]').getAttribute("data-tone"), { timeout: UI_TIMEOUT_MS })
      .toBe("ok");
    expect(await page.locator('li.card[data-tool-call-id="look-1"]').getAttribute("data-tone")).toBe("ok");
    const ok = await colours('li.card[data-tool-call-id="make-1"]', "--ok");
    expect(ok.border).toBe(ok.expected);
  });

  it("shows an outcome_unknown call as a warning in its own words and colour, never a green executed; then who reconciled it and the evidence", async () => {
    const armed = await fetch(`${stack.demo.baseUrl}/control/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "create_dashboard", mode: "commit_then_drop" }),
    });
    expect(armed.status).toBe(200);
    const runId = await trigger("from the pages test: a dashboard whose answer is lost", [
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "lost-1", arguments: { title: `lost-${Date.now()}` } }] },
      { text: "ok" },
    ]);
    await approve(runId, "lost-1");
    await toEnd(runId);
    const [row] = (await engine.runMutations(runId)).mutations;
    expect(row?.state).toBe("outcome_unknown");

    await openRun(runId);
    const card = page.locator('li.card[data-tool-call-id="lost-1"]');
    await expect.poll(() => card.locator("h3 .stage").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("outcome unknown");
    expect(await card.getAttribute("data-tone")).toBe("warn");
    expect(await card.getAttribute("data-stage")).toBe("executed"); // the event says it left; the card says nobody knows
    expect(await card.innerText()).toContain("nobody knows whether it happened");
    const warn = await colours('li.card[data-tool-call-id="lost-1"]', "--warn");
    expect(warn.border).toBe(warn.expected);
    const green = await colours('li.card[data-tool-call-id="lost-1"]', "--ok");
    expect(warn.border).not.toBe(green.expected);
    // The run ended, but not as a plain green "completed".
    await expect.poll(() => page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed, outcome unknown");
    expect(await page.locator("h2 .status").getAttribute("class")).toContain("tone-warn");

    const evidence = "the demo server lists the dashboard";
    await engine.reconcile(row!.mutation_id, { outcome: "completed", evidence, reconciled_by: "ops-lead" });
    const reconciled = card.locator(".reconciliation");
    await reconciled.waitFor({ timeout: UI_TIMEOUT_MS });
    const settled = await engine.mutation(row!.mutation_id);
    expect(await reconciled.innerText()).toContain(`Reconciled by ${settled.reconciliation!.reconciled_by}`);
    expect(await reconciled.innerText()).toContain(evidence);
    await expect.poll(() => card.getAttribute("data-tone"), { timeout: UI_TIMEOUT_MS }).toBe("ok");
    expect(await card.locator("h3 .stage").innerText()).toContain("completed (reconciled by");
    await expect.poll(() => page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
  });
});
