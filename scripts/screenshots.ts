// `npm run screenshots`: PNGs of the operator console's main pages in
// docs/screenshots/, made in real headless Chromium against `wrangler dev` and
// the demo MCP server, with runs seeded through the engine client: a run
// waiting for a confirm-level approval after an approved and a denied call, a
// question, an outcome_unknown row waiting for reconciliation, a completed
// and a cancelled run.
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";
import { EngineClient, type ScriptTurn } from "../src/client";
import { launchConsoleBrowser, signIn, startConsoleStack } from "../test/support/console-browser";

const OUT = resolve(import.meta.dirname, "../docs/screenshots");
const CREATE = "mcp__demo__create_dashboard";
const ALERT = "mcp__demo__create_alert_from_chart";
const WAIT_MS = 15_000;

const stack = await startConsoleStack();
const engine = new EngineClient({ baseUrl: stack.server.url, token: stack.server.token });

async function run(script: ScriptTurn[], message = "Set up billing monitoring", channel = "C-ops"): Promise<string> {
  return (await engine.trigger({ message, channel_id: channel, script })).run_id;
}

async function pendingApproval(runId: string, toolCallId: string): Promise<string> {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const found = (await engine.summary(runId)).pending_approvals.find((a) => a.tool_call_id === toolCallId);
    if (found) return found.approval_id;
    if (Date.now() > end) throw new Error(`no approval for ${toolCallId} in ${runId}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function toEnd(runId: string): Promise<void> {
  for await (const _ of engine.events(runId)) {
    // drain to the terminal event
  }
}

async function shoot(page: Page, name: string, url: string, ready: string): Promise<void> {
  await page.goto(url);
  await page.locator(ready).first().waitFor({ timeout: WAIT_MS });
  await page.waitForTimeout(300); // let polled data and countdowns settle into the picture
  await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  console.log(`wrote docs/screenshots/${name}.png`);
}

try {
  await mkdir(OUT, { recursive: true });
  // An outcome nobody knows: the demo server commits, then drops the response.
  await fetch(`${stack.demo.baseUrl}/control/faults`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool: "create_dashboard", mode: "commit_then_drop" }),
  });
  const lost = await run(
    [
      { text: "Creating the Payments SLO dashboard." },
      { tool_calls: [{ tool_name: CREATE, tool_call_id: "call-1", arguments: { title: "Payments SLO" } }] },
      { text: "I sent it, but the server's answer was lost." },
    ],
    "Make a Payments SLO dashboard",
  );
  await engine.decideApproval(lost, await pendingApproval(lost, "call-1"), { decision: "approve" });
  await toEnd(lost);

  // The run shown on its own page: one call approved and run, one denied, then a confirm-level call waiting.
  // A finished run, and one cancelled while it waited.
  const hello = await run(
    [{ text: "The checkout dashboard has 4 panels." }],
    "How many panels does the checkout dashboard have?",
    "C-support",
  );
  await toEnd(hello);
  const cancelled = await run(
    [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "gone-1", arguments: { title: "Scratch" } }] }, { text: "ok" }],
    "Make a scratch dashboard",
  );
  await pendingApproval(cancelled, "gone-1");
  await engine.cancel(cancelled);
  await toEnd(cancelled);

  const main = await run([
    { text: "I will create the dashboard, then an alert on its latency chart." },
    {
      tool_calls: [
        { tool_name: CREATE, tool_call_id: "create-1", arguments: { title: "Checkout latency", panels: ["p50", "p99"] } },
        { tool_name: CREATE, tool_call_id: "create-2", arguments: { title: "Scratch", api_key: "sk-live-do-not-show" } },
      ],
    },
    {
      tool_calls: [
        {
          tool_name: ALERT,
          tool_call_id: "alert-1",
          arguments: { dashboard_id: "dash-2", chart: "p99", threshold: 800, channel: "#payments" },
        },
      ],
    },
    { text: "Done." },
  ]);
  await engine.decideApproval(main, await pendingApproval(main, "create-1"), { decision: "approve" });
  await engine.decideApproval(main, await pendingApproval(main, "create-2"), {
    decision: "deny",
    reason: "not needed",
  });
  await pendingApproval(main, "alert-1");
  await run(
    [
      { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "Which team owns billing alerts?" } }] },
      { text: "ok" },
    ],
    "Route the billing alerts to the right team",
    "C-billing",
  );

  for (const [suffix, viewport] of [
    ["", { width: 1280, height: 860 }],
    ["-phone", { width: 390, height: 844 }],
  ] as const) {
    const browser = await launchConsoleBrowser(viewport);
    try {
      const page = browser.page;
      const base = `${stack.server.url}/console`;
      if (suffix === "") await shoot(page, "sign-in", base, "#sign-in");
      await signIn(page, stack.server.url, stack.server.token);
      await shoot(page, `run${suffix}`, `${base}#/runs/${main}`, 'li.card[data-tool-call-id="alert-1"][data-stage="waiting_for_approval"]');
      await shoot(page, `runs${suffix}`, `${base}#/runs`, `tr[data-run-id="${main}"] .tone-waiting`);
      if (suffix === "") {
        await shoot(page, "waiting", `${base}#/`, "li[data-approval-id]");
        await shoot(
          page,
          "run-unknown",
          `${base}#/runs/${lost}`,
          'li.card[data-tool-call-id="call-1"][data-tone="warn"] .outcome[data-outcome]',
        );
        await shoot(page, "approvals", `${base}#/approvals`, "#approvals-title");
        await shoot(page, "questions", `${base}#/questions`, "#questions-title");
        await shoot(page, "outcomes", `${base}#/outcomes`, "li[data-mutation-id]");
        await shoot(page, "storage-pool", `${base}#/pool`, ".slots");
      }
    } finally {
      await browser.close();
    }
  }
} finally {
  await stack.stop();
}
