// The approval a Slack message links to (contract section 19, "What you see
// is what you approve"), in real headless Chromium: the console's route
// `#/runs/<run>/approvals/<approval>` shows that approval in focus, its
// arguments whole as the engine redacted them (the part Slack had to cut
// included), and every path the engine withheld with its length.
import { describe, expect, it } from "vitest";
import { useConsoleSuite } from "../support/browser-session";
import { waitForSummary } from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

const pageErrors: Error[] = [];
const ui = useConsoleSuite({ pageErrors });

describe("an approval linked from Slack, in Chromium", () => {
  it("shows the linked approval in focus, its arguments whole past Slack's 2,500 characters, and every withheld path", async () => {
    const panels = Array.from({ length: 120 }, (_, i) => `panel number ${i} of the quarterly review`);
    const { run_id: runId } = await ui.engine.trigger({
      message: "two dashboards",
      channel_id: "C-hidden",
      script: [
        {
          tool_calls: [
            { tool_name: CREATE, tool_call_id: "plain-1", arguments: { title: "plain" } },
            {
              tool_name: CREATE,
              tool_call_id: "long-1",
              arguments: { title: "long", panels, session: "DROP TABLE customers; --", "a/b": { password: "pw-0123" } },
            },
          ],
        },
      ],
    });
    const pending = await waitForSummary(
      ui.engine,
      runId,
      (s) => (s.pending_approvals.length === 2 ? s.pending_approvals : undefined),
      UI_TIMEOUT_MS,
    );
    const linked = pending.find((a) => a.tool_call_id === "long-1")!;
    await ui.page.goto(
      `${ui.stack.server.url}/console#/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(linked.approval_id)}`,
    );
    const focused = ui.page.locator('[data-focused="true"]');
    await focused.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.page.locator('[data-focused="true"]').count()).toBe(1);
    expect(await focused.getAttribute("data-tool-call-id")).toBe("long-1");

    const json = (await focused.locator("figure.json pre").textContent()) ?? "";
    expect(json.length).toBeGreaterThan(2_500);
    expect(JSON.parse(json)).toEqual({ title: "long", panels, session: "[redacted]", "a/b": { password: "[redacted]" } });
    const withheld = await focused.locator("[data-hidden-path]").evaluateAll((items) => items.map((li) => li.textContent));
    expect(withheld).toEqual(["/session (26 characters)", "/a~1b/password (9 characters)"]);
    expect(await ui.page.content()).not.toContain("DROP TABLE");

    // The other approval on the page is not the one in focus, and withholds nothing.
    const plain = ui.page.locator('[data-tool-call-id="plain-1"]');
    expect(await plain.getAttribute("data-focused")).toBeNull();
    expect(await plain.locator("[data-hidden-path]").count()).toBe(0);
    await ui.engine.cancel(runId);
    expect(pageErrors).toEqual([]);
  });
});
