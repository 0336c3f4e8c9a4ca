// The console's pages across runs, in real headless Chromium (contract
// sections 15 and 16): the runs listing, the approvals inbox and the questions
// page, which read GET /api/runs, /api/approvals and /api/inputs. They need
// the run index filled by each run's object (src/listings/run-index.ts).
import { describe, expect, it } from "vitest";
import type { Page, Response as PageResponse } from "playwright-core";
import type { ScriptTurn } from "../../src/client";
import { useConsoleSuite } from "../support/browser-session";
import { screenshot, waitForSummary } from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
/** The demo server annotates it destructiveHint: true (contract section 21). */
const DELETE = "mcp__demo__delete_dashboard";
/** The message every run of this file is triggered with: the inbox shows it as the request. */
const REQUEST = "from the listings browser test";
/** The session's principal: the API token's (contract section 18). */
const PRINCIPAL = "token:root";
const CANARY = `canary-${Math.random().toString(36).slice(2)}-secret`;
/** The index may lag a moment behind the run (an alarm flushes it); the page polls every 2 s. */
const UI_TIMEOUT_MS = 15_000;

const ui = useConsoleSuite();

const consoleUrl = (hash = "") => `${ui.stack.server.url}/console${hash}`;

async function trigger(script: ScriptTurn[]): Promise<string> {
  return (await ui.engine.trigger({ message: REQUEST, channel_id: "C-inbox", script })).run_id;
}

async function dashboards(): Promise<string[]> {
  const state = (await (await fetch(`${ui.stack.demo.baseUrl}/control/state`)).json()) as { dashboards: { title: string }[] };
  return state.dashboards.map((d) => d.title);
}

/** A response of the approvals inbox's listing poll. */
const listing = (res: PageResponse) => res.url().includes("/api/approvals?");

/** The page scrolls sideways by this many pixels (0: nothing is wider than the viewport). */
const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/** Whether a run id's link stands on one line, monospace, with the whole id in its title. */
async function runIdLine(page: Page, scope: string, runId: string): Promise<{ lines: number; title: string | null; mono: boolean }> {
  const link = page.locator(`${scope} a[href="#/runs/${runId}"]`).first();
  return {
    lines: await link.evaluate((a) => new Set(Array.from(a.getClientRects()).map((r) => Math.round(r.top))).size),
    title: await link.getAttribute("title"),
    mono: await link.evaluate((a) => getComputedStyle(a).fontFamily.includes("monospace")),
  };
}

async function approvalIdOf(runId: string): Promise<string> {
  return (await waitForSummary(ui.engine, runId, (s) => s.pending_approvals[0], UI_TIMEOUT_MS)).approval_id;
}

describe.sequential("the console's listings in Chromium (need the run index)", () => {
  it("lists a new run on the runs page, and its link opens the run's timeline", async () => {
    const runId = await trigger([{ text: "listed" }]);
    await ui.page.goto(consoleUrl("#/runs"));
    const row = ui.page.locator(`tr[data-run-id="${runId}"]`);
    await row.waitFor({ timeout: UI_TIMEOUT_MS });
    await row.getByRole("link", { name: runId }).click();
    await ui.page.getByRole("heading", { name: new RegExp(`Run ${runId}`) }).waitFor({ timeout: UI_TIMEOUT_MS });
  });

  it("approves a mutation from the inbox; its card reaches executed and the demo server's state changes", async () => {
    const title = `inbox-approved-${Date.now()}`;
    const runId = await trigger([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "inbox-1", arguments: { title, client_secret: CANARY } }] },
      { text: "done" },
    ]);
    const approvalId = await approvalIdOf(runId);
    await ui.page.goto(consoleUrl("#/approvals"));
    const item = ui.page.locator(`li[data-approval-id="${approvalId}"]`);
    await item.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.page.locator("body").innerText()).not.toContain(CANARY);
    expect(await item.innerText()).toMatch(/\[redacted\]/i);
    // The listing names what the engine withheld, as the run page does (contract section 19).
    const withheld = await item.locator("[data-hidden-path]").evaluateAll((items) => items.map((li) => li.textContent));
    expect(withheld).toEqual([`/client_secret (${JSON.stringify(CANARY).length} characters)`]);
    await item.getByRole("button", { name: "Approve" }).click();
    await item.getByText(`Decision sent: approved by ${PRINCIPAL}.`).waitFor({ timeout: UI_TIMEOUT_MS });
    // The decided card keeps the arguments decided on, and says whether the call ran: its durable outcome.
    expect(await item.locator("figure.json pre").textContent()).toContain(title);
    await expect
      .poll(() => item.locator(".outcome[data-outcome]").getAttribute("data-outcome"), { timeout: UI_TIMEOUT_MS })
      .toBe("completed");
    expect(await item.locator(".outcome").innerText()).toContain("Durable outcome: completed");
    await item.getByRole("link", { name: runId }).click();
    const card = ui.page.locator('li.card[data-tool-call-id="inbox-1"]');
    await expect.poll(() => card.getAttribute("data-stage"), { timeout: UI_TIMEOUT_MS }).toBe("executed");
    await expect.poll(() => card.innerText(), { timeout: UI_TIMEOUT_MS }).toContain(PRINCIPAL);
    expect(await dashboards()).toContain(title);
  });

  it("denies from the inbox; the decided item stays in this view, a fresh inbox no longer lists it, and nothing runs", async () => {
    const runId = await trigger([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "inbox-2", arguments: { title: "inbox-denied" } }] },
      { text: "ok" },
    ]);
    const approvalId = await approvalIdOf(runId);
    await ui.page.goto(consoleUrl("#/approvals"));
    const item = ui.page.locator(`li[data-approval-id="${approvalId}"]`);
    await item.waitFor({ timeout: UI_TIMEOUT_MS });
    // A listing poll of this page that no longer lists the approval (the index caught up with the decision).
    const dropped = ui.page.waitForResponse(async (res) => listing(res) && !(await res.text()).includes(approvalId), {
      timeout: UI_TIMEOUT_MS,
    });
    await item.getByRole("button", { name: "Deny" }).click();
    await item.getByText("Decision sent: denied").waitFor({ timeout: UI_TIMEOUT_MS });
    // The decided item stays in this view with its confirmation after the listing dropped it...
    await dropped;
    // The page's next poll (every 2 s): the listing that dropped it has been rendered by then.
    await ui.page.waitForResponse(listing, { timeout: UI_TIMEOUT_MS });
    expect(await item.getByText("Decision sent: denied").isVisible()).toBe(true);
    // ...and a fresh view of the inbox does not show it.
    await ui.page.goto(consoleUrl("#/runs"));
    const fresh = ui.page.waitForResponse(listing, { timeout: UI_TIMEOUT_MS });
    await ui.page.goto(consoleUrl("#/approvals"));
    expect(await (await fresh).text()).not.toContain(approvalId);
    await ui.page.getByRole("heading", { name: "Approvals waiting" }).waitFor({ timeout: UI_TIMEOUT_MS });
    await expect.poll(() => item.count(), { timeout: UI_TIMEOUT_MS }).toBe(0);
    expect((await ui.engine.summary(runId)).pending_approvals).toEqual([]);
    expect(await dashboards()).not.toContain("inbox-denied");
  });

  for (const viewport of ["desktop", "phone"] as const) {
    it(`shows on every inbox card who asked, what for, and the Destructive mark; a question's card names the asking tool (${viewport})`, async () => {
      const page = viewport === "phone" ? ui.phone : ui.page;
      const deleting = await trigger([
        { tool_calls: [{ tool_name: DELETE, tool_call_id: `del-${viewport}`, arguments: { dashboard_id: "dash-1" } }] },
        { text: "ok" },
      ]);
      const asking = await trigger([
        { tool_calls: [{ tool_name: "human__ask", tool_call_id: `ask-${viewport}`, arguments: { question: `Why, ${viewport}?` } }] },
        { text: "ok" },
      ]);
      const approvalId = await approvalIdOf(deleting);
      await page.goto(consoleUrl("#/"));
      const approval = page.locator(`li[data-approval-id="${approvalId}"]`);
      const question = page.locator(`li[data-tool-call-id="ask-${viewport}"]`).filter({ hasText: asking });
      await approval.waitFor({ timeout: UI_TIMEOUT_MS });
      await question.waitFor({ timeout: UI_TIMEOUT_MS });
      // What the run page's timeline opens with: who asked and the request, here on the card itself.
      for (const card of [approval, question]) {
        await expect.poll(() => card.locator(".who-said").innerText(), { timeout: UI_TIMEOUT_MS }).toBe(`${PRINCIPAL} asked`);
        expect(await card.locator(".said").innerText()).toBe(REQUEST);
      }
      expect(await approval.locator(".destructive").innerText()).toMatch(/^Destructive: its server says/);
      expect(await approval.locator(".destructive").isVisible()).toBe(true);
      expect(await question.locator("h3").innerText()).toContain("human__ask");
      // The run's id: one line, monospace, the whole id in its title.
      expect(await runIdLine(page, `li[data-approval-id="${approvalId}"]`, deleting)).toEqual({ lines: 1, title: deleting, mono: true });
      // The time left is labelled in visible words, not only for a screen reader.
      const label = approval.locator(".time-left-label");
      expect((await label.innerText()).trim()).toBe("Time left:");
      expect((await label.boundingBox())?.width ?? 0).toBeGreaterThan(20);
      expect(await sideways(page)).toBe(0);
      await screenshot(page, `inbox-${viewport}`);
      await ui.engine.cancel(deleting);
      await ui.engine.cancel(asking);
      if (viewport === "phone") {
        await page.goto(consoleUrl("#/runs?channel_id=C-inbox"));
        await page.locator(`tr[data-run-id="${asking}"]`).waitFor({ timeout: UI_TIMEOUT_MS });
        expect(await runIdLine(page, `tr[data-run-id="${asking}"]`, asking)).toEqual({ lines: 1, title: asking, mono: true });
        expect(await sideways(page)).toBe(0);
        await screenshot(page, "runs-phone");
      }
    });
  }

  it("answers a question from the questions page", async () => {
    const runId = await trigger([
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-inbox", arguments: { question: "Which region?" } }] },
      { text: "ok" },
    ]);
    await ui.page.goto(consoleUrl("#/questions"));
    const item = ui.page.locator('li[data-tool-call-id="ask-inbox"]');
    await item.waitFor({ timeout: UI_TIMEOUT_MS });
    await item.getByLabel("Which region?").fill("eu-west");
    await item.getByRole("button", { name: "Send answer" }).click();
    for await (const event of ui.engine.events(runId)) {
      if (event.type === "human_input_received") expect(event.answered_by).toBe(PRINCIPAL);
    }
    expect((await ui.engine.summary(runId)).status).toBe("completed");
  });
});
