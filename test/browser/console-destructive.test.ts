// What an MCP server says, in the console in real headless Chromium (contract
// section 21). The approval form marks a tool its server annotates
// `destructiveHint: true` "Destructive", from the annotations on
// approval_requested, and marks no other tool: the demo MCP server's
// delete_dashboard beside its create_dashboard. A question a stateless
// server asks mid-call is answered with the form built from its
// requested_schema, on the run's card and in the inbox.
import type { Locator } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2eVars } from "../e2e/global-setup";
import { STATELESS_API_KEY_HEADER, startStatelessMcpServer, type StatelessMcpServer } from "../support/stateless-mcp-server";
import { useConsoleSuite } from "../support/browser-session";
import { screenshot, waitForSummary } from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
const DELETE = "mcp__demo__delete_dashboard";
const CONFIRM_NOTE = "mcp__stateless__confirm_note";
const STATELESS_KEY = "stateless-key-console";
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

let stateless: StatelessMcpServer;
const pageErrors: Error[] = [];

// Registered before the console's hooks: the stateless server starts before the Worker names it, and stops after it.
beforeAll(async () => {
  stateless = await startStatelessMcpServer(STATELESS_KEY);
});

afterAll(async () => {
  await stateless?.stop();
});

const ui = useConsoleSuite({
  pageErrors,
  vars: (demoUrl) => {
    const vars = e2eVars(demoUrl);
    return {
      MCP_SERVERS: JSON.stringify({
        ...JSON.parse(vars.MCP_SERVERS!),
        stateless: { url: stateless.url, headers: { [STATELESS_API_KEY_HEADER]: STATELESS_KEY } },
      }),
      MUTATION_BUDGET: JSON.stringify({ ...JSON.parse(vars.MUTATION_BUDGET!), [CONFIRM_NOTE]: 2 }),
    };
  },
});

/** A run calling confirm_note, approved through the API; resolves once the server's question waits. */
async function questionAsked(text: string): Promise<{ runId: string; inputId: string }> {
  const { run_id: runId } = await ui.engine.trigger({
    message: "a note",
    channel_id: "C-questions",
    script: [{ tool_calls: [{ tool_name: CONFIRM_NOTE, tool_call_id: "note-1", arguments: { text } }] }, { text: "done" }],
  });
  const approval = await waitForSummary(ui.engine, runId, (s) => s.pending_approvals[0], UI_TIMEOUT_MS);
  await ui.engine.decideApproval(runId, approval.approval_id, { decision: "approve" });
  const inputId = await waitForSummary(
    ui.engine,
    runId,
    (s) => (s.pending_inputs as { input_id?: string }[]).find((q) => q.input_id !== undefined)?.input_id,
    UI_TIMEOUT_MS,
  );
  return { runId, inputId };
}

/** Where a checkbox stands against its label's words: on the same line, how many pixels before them, and how wide it is. */
const checkboxBeside = (form: Locator, name: string) =>
  form.getByRole("checkbox", { name }).evaluate((box) => {
    const words = Array.from(box.closest("label")!.childNodes).filter(
      (n) => n.nodeType === Node.TEXT_NODE && (n.textContent ?? "").trim() !== "",
    );
    const range = document.createRange();
    range.selectNodeContents(words.at(-1)!);
    const b = box.getBoundingClientRect();
    const t = range.getBoundingClientRect();
    // Its own width too: a checkbox stretched across the line draws its box far from the words, whatever the gap.
    return { sameLine: Math.abs((b.top + b.bottom) / 2 - (t.top + t.bottom) / 2) < 6, gap: Math.round(t.left - b.right), width: b.width };
  });

/** The question form's layout at one viewport: checkboxes beside their labels, Cancel outlined (not the primary's fill). */
async function questionFormLayout(form: Locator) {
  const fill = (name: string) => form.getByRole("button", { name, exact: true }).evaluate((b) => getComputedStyle(b).backgroundColor);
  return {
    urgent: await checkboxBeside(form, "Urgent"),
    cancelFilledLikeAccept: (await fill("Cancel")) === (await fill("Accept")),
    cancelFill: await fill("Cancel"),
  };
}

const lastResponses = () =>
  stateless
    .seen()
    .filter((r) => r.tool === "confirm_note")
    .at(-1)?.inputResponses;

describe("the approval form in Chromium", () => {
  it("marks the destructive tool's approval \"Destructive\" and not the other's", async () => {
    const { run_id: runId } = await ui.engine.trigger({
      message: "tidy the dashboards",
      channel_id: "C-destructive",
      script: [
        {
          tool_calls: [
            { tool_name: CREATE, tool_call_id: "create-1", arguments: { title: "new" } },
            { tool_name: DELETE, tool_call_id: "delete-1", arguments: { dashboard_id: "dash-1" } },
          ],
        },
      ],
    });
    await waitForSummary(ui.engine, runId, (s) => (s.pending_approvals.length === 2 ? true : undefined), UI_TIMEOUT_MS);
    await ui.page.goto(`${ui.stack.server.url}/console#/runs/${runId}`);
    const form = (tool: string) => ui.page.getByRole("form", { name: `Decide ${tool}` });
    await form(DELETE).waitFor({ timeout: UI_TIMEOUT_MS });
    await form(CREATE).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await form(DELETE).locator(".destructive").innerText()).toMatch(/^Destructive: its server says/);
    expect(await form(DELETE).getByText("to confirm").count()).toBe(1);
    expect(await form(CREATE).locator(".destructive").count()).toBe(0);
    expect(await form(CREATE).innerText()).not.toContain("Destructive");
    await ui.engine.cancel(runId);
    expect(pageErrors).toEqual([]);
  });
});

describe("an MCP server's question mid-call in Chromium", () => {
  it("answers it on the run's card with the form from requested_schema: a bad value is shown and not sent, a good one goes to the server typed", async () => {
    const { runId, inputId } = await questionAsked("from chromium");
    await ui.page.goto(`${ui.stack.server.url}/console#/runs/${runId}`);
    const form = ui.page.locator(`form.question-form[data-input-id="${inputId}"]`);
    await form.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await form.innerText()).toContain('Create the note "from chromium"?');
    // Judged at both viewports before anything is typed: the same form on the phone page.
    const phoneForm = ui.phone.locator(`form.question-form[data-input-id="${inputId}"]`);
    await ui.phone.goto(`${ui.stack.server.url}/console#/runs/${runId}`);
    await phoneForm.waitFor({ timeout: UI_TIMEOUT_MS });
    for (const [viewport, f] of [
      ["desktop", form],
      ["phone", phoneForm],
    ] as const) {
      const layout = await questionFormLayout(f);
      expect(layout.urgent.sameLine, viewport).toBe(true);
      expect(layout.urgent.gap, viewport).toBeGreaterThanOrEqual(0);
      expect(layout.urgent.gap, viewport).toBeLessThanOrEqual(16);
      expect(layout.urgent.width, viewport).toBeLessThanOrEqual(24);
      expect(layout.cancelFilledLikeAccept, viewport).toBe(false);
      expect(layout.cancelFill, viewport).toBe("rgba(0, 0, 0, 0)");
      await screenshot(viewport === "phone" ? ui.phone : ui.page, `question-form-${viewport}`);
    }
    await ui.phone.goto("about:blank");
    await form.locator('[data-field="confirm"] select').selectOption("true");
    await form.locator('[data-field="label"] input').fill("x".repeat(21));
    await form.getByRole("button", { name: "Accept" }).click();
    await expect
      .poll(() => form.locator('[data-field="label"] .field-error').innerText(), { timeout: UI_TIMEOUT_MS })
      .toContain("at most 20");
    expect(await form.locator('[data-field="label"] input').getAttribute("aria-invalid")).toBe("true");
    expect(lastResponses()).toBeUndefined();

    // The multi-select is checkboxes: two ticked is more than its maxItems, refused in the page.
    await form.getByRole("checkbox", { name: "Urgent" }).check();
    await form.getByRole("checkbox", { name: "Later" }).check();
    await form.locator('[data-field="label"] input').fill("ops");
    await form.getByRole("button", { name: "Accept" }).click();
    await expect
      .poll(async () => (await form.locator('[data-field="tags"] .field-error').textContent()) ?? "", { timeout: UI_TIMEOUT_MS })
      .toContain("Choose at most 1.");
    expect(lastResponses()).toBeUndefined();
    await form.getByRole("checkbox", { name: "Urgent" }).uncheck();
    await form.getByRole("button", { name: "Accept" }).click();
    const card = ui.page.locator('li.card[data-tool-call-id="note-1"]');
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
    expect(lastResponses()).toEqual({ confirm: { action: "accept", content: { confirm: true, label: "ops", tags: ["later"] } } });
    await expect.poll(() => card.innerText(), { timeout: UI_TIMEOUT_MS }).toContain("answered by token:root");
    expect(pageErrors).toEqual([]);
  });

  it("shows it in the inbox from GET /api/inputs, where Decline declines it and the listing says answered", async () => {
    const { runId, inputId } = await questionAsked("declined in chromium");
    // The inbox reads the inputs listing (contract section 15), where the question is its own item with its form.
    const listedAs = async (status: "pending" | "answered") =>
      (await ui.engine.listInputs({ status, limit: 200 })).inputs.find((q) => q.run_id === runId && q.input_id === inputId);
    await expect
      .poll(() => listedAs("pending"), { timeout: UI_TIMEOUT_MS })
      .toMatchObject({ run_id: runId, tool_call_id: "note-1", status: "pending", requested_schema: { type: "object" } });
    await ui.page.goto(`${ui.stack.server.url}/console#/questions`);
    // Input ids are per run (`<tool_call_id>:<round>:<key>`): the earlier case's run had the same one.
    const item = ui.page.locator(`li.card[data-input-id="${inputId}"]`).filter({ hasText: runId });
    await item.waitFor({ timeout: UI_TIMEOUT_MS });
    await item.getByRole("button", { name: "Decline" }).click();
    await expect.poll(() => item.innerText(), { timeout: UI_TIMEOUT_MS }).toContain("Declined.");
    await waitForSummary(ui.engine, runId, (s) => (s.status === "completed" ? true : undefined), UI_TIMEOUT_MS);
    expect(lastResponses()).toEqual({ confirm: { action: "decline" } });
    await expect.poll(() => listedAs("answered"), { timeout: UI_TIMEOUT_MS }).toMatchObject({ status: "answered" });
    expect(pageErrors).toEqual([]);
  });
});
