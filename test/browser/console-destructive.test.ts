// The console's approval form in real headless Chromium marks a tool its
// server annotates `destructiveHint: true` "Destructive" (contract section
// 21), from the annotations on approval_requested, and marks no other tool:
// the demo MCP server's delete_dashboard beside its create_dashboard.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineClient } from "../../src/client";
import {
  type ConsoleBrowser,
  type ConsoleStack,
  closeSignedInConsole,
  openSignedInConsole,
  waitForSummary,
} from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
const DELETE = "mcp__demo__delete_dashboard";
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

let stack: ConsoleStack;
let browser: ConsoleBrowser;
let page: Page;
let engine: EngineClient;
const pageErrors: Error[] = [];

beforeAll(async () => {
  ({ stack, browser, page, engine } = await openSignedInConsole(pageErrors));
}, 120_000);

afterAll(() => closeSignedInConsole(browser, stack));

describe("the approval form in Chromium", () => {
  it("marks the destructive tool's approval \"Destructive\" and not the other's", async () => {
    const { run_id: runId } = await engine.trigger({
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
    await waitForSummary(engine, runId, (s) => (s.pending_approvals.length === 2 ? true : undefined), UI_TIMEOUT_MS);
    await page.goto(`${stack.server.url}/console#/runs/${runId}`);
    const form = (tool: string) => page.getByRole("form", { name: `Decide ${tool}` });
    await form(DELETE).waitFor({ timeout: UI_TIMEOUT_MS });
    await form(CREATE).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await form(DELETE).locator(".destructive").innerText()).toMatch(/^Destructive: its server says/);
    expect(await form(DELETE).getByText("to confirm").count()).toBe(1);
    expect(await form(CREATE).locator(".destructive").count()).toBe(0);
    expect(await form(CREATE).innerText()).not.toContain("Destructive");
    await engine.cancel(runId);
    expect(pageErrors).toEqual([]);
  });
});
