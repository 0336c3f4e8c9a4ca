// The console's pages in real headless Chromium (contract sections 16 and
// 20): the hash router renders for any fragment without an uncaught error,
// a run's page is one timeline in event order with outcome states in their
// own words and colours, an unknown run is "not found", and the runs list and
// the navigation show what waits on a person.
import { describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import type { ScriptTurn } from "../../src/client";
import { useConsoleSuite } from "../support/browser-session";
import { screenshot, waitForSummary } from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
const LIST = "mcp__demo__list_dashboards";
/** The principal of the stack's token (contract section 18): the console signs in as it. */
const NAME = "token:root";
/** A secret-looking value in the person's own message: the request shown must have it redacted. */
const MESSAGE_SECRET = `sk-live-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

/** Uncaught exceptions of the page (the console must never throw one). */
const pageErrors: Error[] = [];
const ui = useConsoleSuite({ pageErrors });

const consoleUrl = (hash = "") => `${ui.stack.server.url}/console${hash}`;

async function trigger(message: string, script: ScriptTurn[], channel = "C-pages"): Promise<string> {
  return (await ui.engine.trigger({ message, channel_id: channel, script })).run_id;
}

async function approve(runId: string, toolCallId: string): Promise<void> {
  const approval = await waitForSummary(
    ui.engine,
    runId,
    (s) => s.pending_approvals.find((a) => a.tool_call_id === toolCallId),
    UI_TIMEOUT_MS,
  );
  await ui.engine.decideApproval(runId, approval.approval_id, { decision: "approve" });
}

async function toEnd(runId: string): Promise<void> {
  for await (const _ of ui.engine.events(runId)) {
    // to the terminal event
  }
}

async function openRun(runId: string) {
  await ui.page.goto(consoleUrl(`#/runs/${runId}`));
  await ui.page.getByRole("heading", { name: new RegExp(`Run ${runId}`) }).waitFor({ timeout: UI_TIMEOUT_MS });
}

/** The kinds of the timeline's entries, top to bottom, with the sequences they stand at. */
async function timeline(): Promise<{ kind: string; sequence: number; id?: string }[]> {
  return ui.page.locator("ol.timeline > li").evaluateAll((items) =>
    items.map((li) => ({
      kind: li.getAttribute("data-kind") ?? "",
      sequence: Number(li.getAttribute("data-sequence")),
      ...(li.getAttribute("data-tool-call-id") ? { id: li.getAttribute("data-tool-call-id")! } : {}),
    })),
  );
}

/** Whether a pill is one box lying within the padding box of its closest `container` (nothing overflows sideways). */
async function within(pill: Locator, container: string): Promise<boolean> {
  return pill.evaluate((el, sel) => {
    const box = el.closest(sel)!;
    const outer = box.getBoundingClientRect();
    const style = getComputedStyle(box);
    const left = outer.left + Number.parseFloat(style.borderLeftWidth);
    const right = outer.right - Number.parseFloat(style.borderRightWidth);
    const rects = Array.from(el.getClientRects());
    // One box (a pill broken over two lines is two), inside the container.
    return rects.length === 1 && rects.every((r) => r.left >= left - 0.5 && r.right <= right + 0.5);
  }, container);
}

/** The card's left border colour and the page's colour for a tone, as the browser computed them. */
async function colours(selector: string, variable: string): Promise<{ border: string; expected: string }> {
  return ui.page.evaluate(
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

describe.sequential("the console's pages in Chromium", () => {
  it("renders for any fragment: a malformed escape, an unknown page, and then a real page, with no uncaught error", async () => {
    await ui.page.goto(consoleUrl("#/runs/%E0%A4%A"));
    await ui.page.getByRole("heading", { name: /Run %E0%A4%A/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.page.goto(consoleUrl("#/%E0%A4%A/%"));
    await ui.page.getByRole("heading", { name: "No such page" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.page.locator("main").innerText()).toContain("#%E0%A4%A/%");
    await ui.page.goto(consoleUrl("#/runs"));
    await ui.page.getByRole("heading", { name: "Runs" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(pageErrors).toEqual([]);
  });

  it("shows a run id the engine does not know as not found: no running status, no Cancel button", async () => {
    await ui.page.goto(consoleUrl("#/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV"));
    await ui.page.getByRole("heading", { name: /not found/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    const main = await ui.page.locator("main").innerText();
    expect(main).not.toMatch(/running/i);
    expect(await ui.page.getByRole("button", { name: "Cancel run" }).count()).toBe(0);
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
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
    const entries = await timeline();
    expect(entries.map((e) => e.id ?? e.kind)).toEqual(["request", "message", "look-1", "message", "make-1", "final"]);
    const sequences = entries.slice(1).map((e) => e.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    const text = await ui.page.locator("main").innerText();
    expect(text).toContain("from the pages test: look, then create");
    expect(text).toContain("token:root asked");
    expect(text).not.toContain(MESSAGE_SECRET);
    expect(text.split("All done: one dashboard.").length - 1).toBe(1);
    expect(await ui.page.locator('li[data-kind="final"]').innerText()).toContain("Final answer");
    // Success in green: a read that returned, and a mutation whose durable outcome is completed.
    await expect
      .poll(() => ui.page.locator('li.card[data-tool-call-id="make-1"]').getAttribute("data-tone"), { timeout: UI_TIMEOUT_MS })
      .toBe("ok");
    expect(await ui.page.locator('li.card[data-tool-call-id="look-1"]').getAttribute("data-tone")).toBe("ok");
    const ok = await colours('li.card[data-tool-call-id="make-1"]', "--ok");
    expect(ok.border).toBe(ok.expected);
  });

  it("shows an outcome_unknown call as a warning in its own words and colour, never a green executed; then who reconciled it and the evidence", async () => {
    const armed = await fetch(`${ui.stack.demo.baseUrl}/control/faults`, {
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
    const [row] = (await ui.engine.runMutations(runId)).mutations;
    expect(row?.state).toBe("outcome_unknown");

    await openRun(runId);
    const card = ui.page.locator('li.card[data-tool-call-id="lost-1"]');
    await expect.poll(() => card.locator("h3 .stage").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("outcome unknown");
    expect(await card.getAttribute("data-tone")).toBe("warn");
    expect(await card.getAttribute("data-stage")).toBe("executed"); // the event says it left; the card says nobody knows
    expect(await card.innerText()).toContain("nobody knows whether it happened");
    // On a phone the warning pills stay inside the card and the heading.
    await ui.phone.goto(consoleUrl(`#/runs/${runId}`));
    const phoneCard = ui.phone.locator('li.card[data-tool-call-id="lost-1"]');
    await expect.poll(() => phoneCard.locator("h3 .stage").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("outcome unknown");
    await expect.poll(() => ui.phone.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed, outcome unknown");
    expect(await within(phoneCard.locator("h3 .stage"), 'li.card[data-tool-call-id="lost-1"]')).toBe(true);
    expect(await within(phoneCard.locator(".outcome .state"), 'li.card[data-tool-call-id="lost-1"]')).toBe(true);
    expect(await within(ui.phone.locator("h2 .status"), "main")).toBe(true);
    await screenshot(ui.phone, "run-outcome-unknown-phone");
    await ui.phone.goto("about:blank");
    const warn = await colours('li.card[data-tool-call-id="lost-1"]', "--warn");
    expect(warn.border).toBe(warn.expected);
    const green = await colours('li.card[data-tool-call-id="lost-1"]', "--ok");
    expect(warn.border).not.toBe(green.expected);
    // The run ended, but not as a plain green "completed".
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed, outcome unknown");
    expect(await ui.page.locator("h2 .status").getAttribute("class")).toContain("tone-warn");

    // The runs list says the same: not a green "completed".
    await ui.page.goto(consoleUrl("#/runs?channel_id=C-pages"));
    const listed = ui.page.locator(`tr[data-run-id="${runId}"] td[data-label=Status] .status`);
    await expect.poll(() => listed.innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed, outcome unknown");
    expect(await listed.getAttribute("class")).toContain("tone-warn");
    expect(await ui.page.locator(`tr[data-run-id="${runId}"] td[data-label=Mutations]`).innerText()).toBe("1 unknown");
    await openRun(runId);
    await expect.poll(() => card.locator("h3 .stage").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("outcome unknown");

    const evidence = "the demo server lists the dashboard";
    await ui.engine.reconcile(row!.mutation_id, { outcome: "completed", evidence });
    const reconciled = card.locator(".reconciliation");
    await reconciled.waitFor({ timeout: UI_TIMEOUT_MS });
    const settled = await ui.engine.mutation(row!.mutation_id);
    expect(await reconciled.innerText()).toContain(`Reconciled by ${settled.reconciliation!.reconciled_by}`);
    expect(await reconciled.innerText()).toContain(evidence);
    await expect.poll(() => card.getAttribute("data-tone"), { timeout: UI_TIMEOUT_MS }).toBe("ok");
    expect(await card.locator("h3 .stage").innerText()).toContain("completed (reconciled by");
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
  });

  it("leads the runs list with what waits on a person: its own status, the request's first words, who asked, outcomes, filters", async () => {
    const channel = `C-list-${Date.now()}`;
    const waitingApproval = await trigger(
      "please create the payments dashboard",
      [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "wait-1", arguments: { title: "payments" } }] }, { text: "ok" }],
      channel,
    );
    const waitingAnswer = await trigger(
      "ask me which team owns billing",
      [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team?" } }] }, { text: "ok" }],
      channel,
    );
    const done = await trigger("just say hello", [{ text: "hello" }], channel);
    const cancelled = await trigger(
      "create something, then get cancelled",
      [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "gone-1", arguments: { title: "gone" } }] }, { text: "ok" }],
      channel,
    );
    const approved = await trigger(
      "create the approved dashboard",
      [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "fine-1", arguments: { title: `fine-${Date.now()}` } }] }, { text: "ok" }],
      channel,
    );
    await approve(approved, "fine-1");
    await toEnd(approved);
    await waitForSummary(ui.engine, cancelled, (s) => s.pending_approvals[0], UI_TIMEOUT_MS);
    await ui.engine.cancel(cancelled);
    await toEnd(cancelled);
    await toEnd(done);

    await ui.page.goto(consoleUrl(`#/runs?channel_id=${channel}`));
    const row = (runId: string) => ui.page.locator(`tr[data-run-id="${runId}"]`);
    const status = (runId: string) => row(runId).locator("td[data-label=Status] .status");
    await expect.poll(() => status(waitingApproval).innerText(), { timeout: UI_TIMEOUT_MS }).toBe("waiting for approval");
    await expect.poll(() => status(waitingAnswer).innerText(), { timeout: UI_TIMEOUT_MS }).toBe("waiting for an answer");
    await expect.poll(() => status(done).innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
    await expect.poll(() => status(cancelled).innerText(), { timeout: UI_TIMEOUT_MS }).toBe("cancelled");
    expect(await status(cancelled).getAttribute("class")).toContain("tone-stopped"); // grey, not a red "failed"
    expect(await status(waitingApproval).getAttribute("class")).toContain("tone-waiting");
    expect(await row(waitingApproval).innerText()).toContain("please create the payments dashboard");
    expect(await row(waitingApproval).locator("td[data-label='Asked by']").innerText()).toContain("token:root");
    await expect.poll(() => row(approved).locator("td[data-label=Mutations]").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("1 completed");
    expect(await row(cancelled).locator("td[data-label=Mutations]").innerText()).toBe("none"); // cancelled before approval: no intent
    expect(await row(done).locator("td[data-label=Duration]").innerText()).toMatch(/^\d+(\.\d)? s$/);

    // The status filter: only what waits on a person.
    await ui.page.getByLabel("Status").selectOption("waiting");
    await expect.poll(() => ui.page.evaluate(() => location.hash)).toContain("status=waiting");
    await expect
      .poll(() => ui.page.locator("tr[data-run-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run-id")).sort()), {
        timeout: UI_TIMEOUT_MS,
      })
      .toEqual([waitingApproval, waitingAnswer].sort());
    await ui.page.getByLabel("Status").selectOption("cancelled");
    await expect
      .poll(() => ui.page.locator("tr[data-run-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-run-id"))), {
        timeout: UI_TIMEOUT_MS,
      })
      .toEqual([cancelled]);
    // The requester filter (the listing's user_id), from the form.
    await ui.page.getByLabel("Status").selectOption("");
    await ui.page.getByLabel("Requester").fill("somebody-else");
    await ui.page.getByRole("button", { name: "Filter" }).click();
    await ui.page.getByText("No run matches these filters.").waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.page.locator("tr[data-run-id]").count()).toBe(0);
  });

  it("counts what waits in the navigation, and the landing page lists it for the person signed in", async () => {
    const navCount = (pageName: string) => ui.page.locator(`nav a[data-page="${pageName}"] .count`).getAttribute("data-count");
    const pendingApprovals = async () => (await ui.engine.listApprovals({ status: "pending", limit: 200 })).approvals.length;
    const pendingInputs = async () => (await ui.engine.listInputs({ status: "pending", limit: 200 })).inputs.length;
    const runId = await trigger("one more dashboard to approve", [
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "count-1", arguments: { title: "counted" } }] },
      { text: "ok" },
    ]);
    await ui.page.goto(consoleUrl("#/"));
    await ui.page.getByRole("heading", { name: `Waiting for ${NAME}` }).waitFor({ timeout: UI_TIMEOUT_MS });
    // The count is the listing's: once the index has this run's approval, the navigation shows the listing's length.
    await expect
      .poll(async () => (await ui.engine.listApprovals({ status: "pending", limit: 200 })).approvals.some((a) => a.run_id === runId), {
        timeout: UI_TIMEOUT_MS,
      })
      .toBe(true);
    await expect
      .poll(async () => `${await navCount("approvals")} / ${await pendingApprovals()}`, { timeout: UI_TIMEOUT_MS })
      .toMatch(/^([1-9]\d*) \/ \1$/);
    const before = Number(await navCount("approvals"));
    expect(before).toBeGreaterThanOrEqual(2); // this run's and the runs-list test's, still waiting
    expect(Number(await navCount("questions"))).toBe(await pendingInputs());
    expect(await ui.page.locator('nav a[data-page="approvals"] .count').getAttribute("class")).toContain("waiting");
    // The landing page lists the same approvals, with their forms.
    const approval = await waitForSummary(ui.engine, runId, (s) => s.pending_approvals[0], UI_TIMEOUT_MS);
    await ui.page.locator(`li[data-approval-id="${approval.approval_id}"]`).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.page.locator(`li[data-approval-id="${approval.approval_id}"]`).getByRole("button", { name: "Approve" }).click();
    await expect.poll(async () => Number(await navCount("approvals")), { timeout: UI_TIMEOUT_MS }).toBe(before - 1);
    await toEnd(runId);
  });

  it("is usable at phone width: long JSON and long ids wrap, nothing scrolls the page sideways", async () => {
    const phone = { page: ui.phone };
    try {
      const long = "x".repeat(600);
      const runId = await trigger(`a very long request ${"y".repeat(400)}`, [
        { tool_calls: [{ tool_name: "mcp__demo__echo", tool_call_id: "echo-1", arguments: { blob: long } }] },
        { tool_calls: [{ tool_name: CREATE, tool_call_id: "wide-1", arguments: { title: long, nested: { deeper: [long] } } }] },
        { text: "ok" },
      ]);
      const overflow = () => phone.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      await phone.page.goto(consoleUrl(`#/runs/${runId}`));
      await phone.page
        .locator('li.card[data-tool-call-id="wide-1"][data-stage="waiting_for_approval"]')
        .waitFor({ timeout: UI_TIMEOUT_MS });
      await phone.page.locator('li.card[data-tool-call-id="echo-1"] .result').waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await overflow()).toBe(0);
      await phone.page.goto(consoleUrl("#/runs"));
      await phone.page.locator(`tr[data-run-id="${runId}"]`).waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await overflow()).toBe(0);
      await phone.page.goto(consoleUrl("#/approvals"));
      await phone.page.locator("li[data-approval-id]").first().waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await overflow()).toBe(0);
      await screenshot(phone.page, "approvals-phone");
      await ui.engine.cancel(runId);
    } finally {
      await phone.page.goto("about:blank");
    }
    expect(pageErrors).toEqual([]);
  });
});
