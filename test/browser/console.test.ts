// The operator console in real headless Chromium (contract section 16),
// against `wrangler dev` and the demo MCP server: sign in, a run's timeline
// live, approve / deny / confirm / answer on its cards, reconcile an
// outcome_unknown row, cancel, sign out. And the safety properties: a
// cross-origin POST with the cookie is 403, no URL or page storage ever holds
// the token, and a secret planted in tool arguments never reaches a page.
import { describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import type { ScriptTurn } from "../../src/client";
import { useConsoleSuite } from "../support/browser-session";
import { screenshot, signIn, waitForSummary } from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
const ALERT = "mcp__demo__create_alert_from_chart";
/** The session's principal: the API token's (contract section 18). */
const PRINCIPAL = "token:root";
/** Planted under a secret-looking key: redaction must keep it off every page. */
const CANARY = `canary-${Math.random().toString(36).slice(2)}-secret`;
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

/** Every URL the pages loaded or fetched. */
const urls: string[] = [];
/** Not signed in: the first test signs in through the page. */
const ui = useConsoleSuite({
  signedIn: false,
  watch: (page) => {
    page.on("request", (r) => urls.push(r.url()));
    // The run page's stream is a WebSocket where the cookie opens one (contract section 27).
    page.on("websocket", (ws) => urls.push(ws.url()));
  },
});

const consoleUrl = (hash = "") => `${ui.stack.server.url}/console${hash}`;

async function demoState(): Promise<{ dashboards: { id: string; title: string }[]; alerts: { chart: string }[] }> {
  return (await fetch(`${ui.stack.demo.baseUrl}/control/state`)).json() as never;
}

async function trigger(script: ScriptTurn[]): Promise<string> {
  return (await ui.engine.trigger({ message: "from the browser test", channel_id: "C-console", script })).run_id;
}

const card = (toolCallId: string) => ui.page.locator(`li.card[data-tool-call-id="${toolCallId}"]`);

async function expectStage(toolCallId: string, stage: string) {
  await expect.poll(() => card(toolCallId).getAttribute("data-stage"), { timeout: UI_TIMEOUT_MS }).toBe(stage);
}

async function openRun(runId: string) {
  await ui.page.goto(consoleUrl(`#/runs/${runId}`));
  await ui.page.getByRole("heading", { name: new RegExp(`Run ${runId}`) }).waitFor({ timeout: UI_TIMEOUT_MS });
}

/** The page's visible text and its whole DOM must not hold the canary or the token. */
async function expectNoSecrets() {
  const text = await ui.page.locator("body").innerText();
  const html = await ui.page.content();
  for (const secret of [CANARY, ui.stack.server.token]) {
    expect(text).not.toContain(secret);
    expect(html).not.toContain(secret);
  }
}

describe.sequential("the console in Chromium", () => {
  it("signs in with the token: an HttpOnly session cookie, and the token nowhere in a URL or page storage", async () => {
    await ui.page.goto(consoleUrl());
    const wrong = ui.page.getByRole("alert");
    await ui.page.getByLabel(/API token/).fill("not-the-token");
    await ui.page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => wrong.innerText(), { timeout: UI_TIMEOUT_MS }).toContain("neither the API token");
    expect((await ui.browser.context.cookies()).filter((c) => c.name === "console_session")).toEqual([]);

    await signIn(ui.page, ui.stack.server.url, ui.stack.server.token);
    await ui.page.getByText(`signed in as ${PRINCIPAL}`).waitFor({ timeout: UI_TIMEOUT_MS });
    const [cookie] = (await ui.browser.context.cookies()).filter((c) => c.name === "console_session");
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict", path: "/" });
    expect(cookie!.value).not.toContain(ui.stack.server.token);

    const storage = await ui.page.evaluate(async () => ({
      local: JSON.stringify({ ...localStorage }),
      session: JSON.stringify({ ...sessionStorage }),
      cookie: document.cookie,
      databases: JSON.stringify(await indexedDB.databases()),
      url: location.href,
    }));
    for (const held of Object.values(storage)) expect(held).not.toContain(ui.stack.server.token);
    expect(storage.cookie).toBe(""); // HttpOnly: no script reads the session cookie
  });

  it("watches a run live, approves its mutation on the card, and sees it executed with its durable outcome and the demo server's state", async () => {
    const title = `console-approved-${Date.now()}`;
    const runId = await trigger([
      { text: "Creating the dashboard.", delay_ms: 300 },
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "create-1", arguments: { title, api_key: CANARY } }] },
      { text: "Created." },
    ]);
    const eventRequestsBefore = urls.filter((u) => u.includes("/events")).length;
    await openRun(runId);
    await expectStage("create-1", "waiting_for_approval");
    await expectNoSecrets();
    // The arguments are shown, redacted.
    await expect.poll(() => card("create-1").innerText()).toMatch(/\[redacted\]/i);
    await expect.poll(() => card("create-1").innerText()).toContain(title);

    await card("create-1").getByRole("button", { name: "Approve" }).click();
    await expectStage("create-1", "executed");
    await expect.poll(() => card("create-1").locator(".outcome").innerText(), { timeout: UI_TIMEOUT_MS }).toContain("completed");
    await expect.poll(() => card("create-1").innerText()).toContain(PRINCIPAL);
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
    expect((await demoState()).dashboards.map((d) => d.title)).toContain(title);
    // One stream for the page (no reconnection was needed here), on a WebSocket (contract section 27).
    const streams = urls.filter((u) => u.includes("/events")).slice(eventRequestsBefore);
    expect(streams).toHaveLength(1);
    expect(streams[0]).toMatch(/^ws:\/\//);
    await expectNoSecrets();
  });

  it("denies a mutation: the card ends not executed (denied) and the demo server is untouched", async () => {
    const before = (await demoState()).dashboards.length;
    const runId = await trigger([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "deny-1", arguments: { title: "never", password: CANARY } }] },
      { text: "ok" },
    ]);
    await openRun(runId);
    await expectStage("deny-1", "waiting_for_approval");
    await card("deny-1").getByLabel("Reason (optional)").fill("not today");
    await card("deny-1").getByRole("button", { name: "Deny" }).click();
    await expectStage("deny-1", "not_executed");
    await expect.poll(() => card("deny-1").innerText()).toContain("denied");
    expect((await demoState()).dashboards.length).toBe(before);
    await expectNoSecrets();
  });

  it("confirms by typing the tool name: a wrong text is refused and leaves it pending, the right one executes", async () => {
    const dashboard = (await demoState()).dashboards[0]!;
    const runId = await trigger([
      {
        tool_calls: [
          { tool_name: ALERT, tool_call_id: "alert-1", arguments: { dashboard_id: dashboard.id, chart: "latency", threshold: 250 } },
        ],
      },
      { text: "ok" },
    ]);
    await openRun(runId);
    await expectStage("alert-1", "waiting_for_approval");
    const confirm = card("alert-1").getByLabel(`Type ${ALERT} to confirm`);
    await confirm.fill("mcp__demo__create_alert");
    await card("alert-1").getByRole("button", { name: "Approve" }).click();
    await expect.poll(() => card("alert-1").getByRole("alert").innerText(), { timeout: UI_TIMEOUT_MS }).toContain("does not match");
    expect(await ui.engine.summary(runId)).toMatchObject({ pending_approvals: [{ tool_call_id: "alert-1" }] });
    await confirm.fill(ALERT);
    await confirm.press("Enter"); // the keyboard submits the form
    await expectStage("alert-1", "executed");
    expect((await demoState()).alerts.map((a) => a.chart)).toContain("latency");
  });

  it("answers a question on its card; the run goes on and records the session's principal", async () => {
    const runId = await trigger([
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team owns billing?" } }] },
      { text: "Thanks." },
    ]);
    await openRun(runId);
    await expectStage("ask-1", "waiting_for_answer");
    await card("ask-1").getByLabel("Which team owns billing?").fill("payments");
    await card("ask-1").getByRole("button", { name: "Send answer" }).click();
    await expect.poll(() => card("ask-1").getAttribute("data-stage"), { timeout: UI_TIMEOUT_MS }).toMatch(/^(answered|executed)$/);
    await expect.poll(() => card("ask-1").innerText(), { timeout: UI_TIMEOUT_MS }).toContain(`answered by ${PRINCIPAL}`);
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("completed");
  });

  it("shows a question's secrets redacted, on its run's card and on the questions page (contract section 20)", async () => {
    const question = `Deploy with password: ${CANARY}? The header is ["X-Api-Key","${CANARY}"].`;
    const runId = await trigger([
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-secret", arguments: { question } }] },
      { text: "ok" },
    ]);
    await openRun(runId);
    await expectStage("ask-secret", "waiting_for_answer");
    await expect.poll(() => card("ask-secret").textContent(), { timeout: UI_TIMEOUT_MS }).toContain("[redacted]");
    await expectNoSecrets();
    await ui.page.goto(consoleUrl("#/questions"));
    await expect
      .poll(() => ui.page.locator(`li.card[data-tool-call-id="ask-secret"]`).textContent(), { timeout: UI_TIMEOUT_MS })
      .toContain("[redacted]");
    await expectNoSecrets();
    await ui.engine.cancel(runId);
  });

  it("cancels a run from its page", async () => {
    const runId = await trigger([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "cancel-1", arguments: { title: "cancelled" } }] },
      { text: "ok" },
    ]);
    await openRun(runId);
    await expectStage("cancel-1", "waiting_for_approval");
    await ui.page.getByRole("button", { name: "Cancel run" }).click();
    await expectStage("cancel-1", "not_executed");
    // A cancelled run is its own grey "cancelled", not a red "failed".
    await expect.poll(() => ui.page.locator("h2 .status").innerText(), { timeout: UI_TIMEOUT_MS }).toBe("cancelled");
    expect(await ui.page.locator("h2 .status").getAttribute("class")).toContain("tone-stopped");
    await expect.poll(() => card("cancel-1").innerText()).toContain("cancelled");
  });

  /** Whether the card's state pill lies within the card's padding box, and on how many lines. */
  const pillInside = (card: Locator) =>
    card.evaluate((li) => {
      const pill = li.querySelector(".state, .stage")!;
      const outer = li.getBoundingClientRect();
      const style = getComputedStyle(li);
      const right = outer.right - Number.parseFloat(style.borderRightWidth);
      const rects = Array.from(pill.getClientRects());
      return {
        inside: rects.every((r) => r.left >= outer.left && r.right <= right + 0.5),
        lines: new Set(rects.map((r) => Math.round(r.top))).size,
      };
    });

  it("reconciles an outcome_unknown row from the outcomes page, recorded as the session's principal", async () => {
    const armed = await fetch(`${ui.stack.demo.baseUrl}/control/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "create_dashboard", mode: "commit_then_drop" }),
    });
    expect(armed.status).toBe(200);
    const runId = await trigger([
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "lost-1", arguments: { title: "lost", token: CANARY } }] },
      { text: "ok" },
    ]);
    const approval = await waitForSummary(ui.engine, runId, (s) => s.pending_approvals[0], UI_TIMEOUT_MS);
    await ui.engine.decideApproval(runId, approval.approval_id, { decision: "approve" });
    for await (const _ of ui.engine.events(runId)) {
      // to the terminal event
    }
    const [row] = (await ui.engine.runMutations(runId)).mutations;
    expect(row?.state).toBe("outcome_unknown");

    await ui.page.goto(consoleUrl("#/outcomes"));
    const item = ui.page.locator(`li[data-mutation-id="${row!.mutation_id}"]`);
    await item.waitFor({ timeout: UI_TIMEOUT_MS });
    await expectNoSecrets();
    // Nothing is preselected: the person says what happened, and a form sent without it is refused in the page.
    expect(await item.locator('input[type="radio"]:checked').count()).toBe(0);
    await item.getByLabel(/Evidence/).fill("not looked yet");
    await item.getByRole("button", { name: "Reconcile" }).click();
    expect(await item.locator('input[type="radio"]:invalid').count()).toBe(2);
    expect((await ui.engine.mutation(row!.mutation_id)).state).toBe("outcome_unknown");
    // On a phone the "outcome unknown" pill stays inside its card.
    await ui.phone.goto(consoleUrl("#/outcomes"));
    const onPhone = ui.phone.locator(`li[data-mutation-id="${row!.mutation_id}"]`);
    await onPhone.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await pillInside(onPhone)).toEqual({ inside: true, lines: 1 });
    await screenshot(ui.phone, "outcomes-phone");
    await ui.phone.goto("about:blank");
    await item.getByLabel("It completed").check();
    await item.getByLabel(/Evidence/).fill("dashboard 'lost' exists in the demo server");
    await item.getByRole("button", { name: "Reconcile" }).click();
    await item.waitFor({ state: "detached", timeout: UI_TIMEOUT_MS });
    const settled = await ui.engine.mutation(row!.mutation_id);
    expect(settled).toMatchObject({ state: "completed", reconciliation: { outcome: "completed", reconciled_by: PRINCIPAL } });
  });

  it("renders for any URL fragment, malformed escapes included, with no uncaught exception (contract section 20)", async () => {
    const errors: string[] = [];
    const onError = (err: Error) => errors.push(err.message);
    ui.page.on("pageerror", onError);
    try {
      for (const fragment of ["#/runs/%E0%A4%A", "#/%", "#/runs/%", "#/approvals/%ZZ", "#%E0", "#/runs/run_%00/x%"]) {
        await ui.page.goto(consoleUrl(fragment));
        await ui.page.getByRole("navigation", { name: "Console pages" }).waitFor({ timeout: UI_TIMEOUT_MS });
        await ui.page.locator("main h2").first().waitFor({ timeout: UI_TIMEOUT_MS });
      }
    } finally {
      ui.page.off("pageerror", onError);
    }
    expect(errors).toEqual([]);
  });

  it("shows the storage pool's slots and line", async () => {
    await ui.page.goto(consoleUrl("#/pool"));
    await ui.page
      .getByText(/of 16 slots in use/)
      .first()
      .waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.page.locator(".slots li").count()).toBe(16);
    // The headline metrics of section 22, read from /api/metrics: the pool's refusals among them.
    const refused = ui.page.locator('[data-metric="pool refusals (total)"] dd');
    await refused.waitFor({ timeout: UI_TIMEOUT_MS });
    const pool = await ui.engine.storagePool();
    expect(Number(await refused.textContent())).toBe(pool.rejected_total);
    for (const label of ["approvals pending", "outcomes unknown", "Slack posts failed (total)"])
      expect(await ui.page.locator(`[data-metric="${label}"] dd`).count(), label).toBe(1);
  });

  it("refuses a cross-origin POST that carries the cookie (403), and one without Origin", async () => {
    const [cookie] = (await ui.browser.context.cookies()).filter((c) => c.name === "console_session");
    const runId = await trigger([{ text: "hello" }]);
    for (const origin of ["http://evil.example", undefined]) {
      const res = await fetch(`${ui.stack.server.url}/api/runs/${runId}/cancel`, {
        method: "POST",
        headers: { cookie: `console_session=${cookie!.value}`, ...(origin ? { origin } : {}) },
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: string }).error).toBe("forbidden_origin");
    }
  });

  it("signs out: back to the sign-in page, and the old cookie is refused", async () => {
    const [cookie] = (await ui.browser.context.cookies()).filter((c) => c.name === "console_session");
    await ui.page.goto(consoleUrl("#/runs"));
    await ui.page.getByRole("button", { name: "Sign out" }).click();
    await ui.page.getByRole("button", { name: "Sign in" }).waitFor({ timeout: UI_TIMEOUT_MS });
    for (const path of ["/api/storage-pool", "/console/assets/console.js", "/console/session"]) {
      const res = await fetch(`${ui.stack.server.url}${path}`, { headers: { cookie: `console_session=${cookie!.value}` } });
      expect(res.status).toBe(401);
    }
    // No URL any page loaded or fetched ever held the token.
    expect(urls.length).toBeGreaterThan(10);
    for (const u of urls) expect(u).not.toContain(ui.stack.server.token);
  });
});
