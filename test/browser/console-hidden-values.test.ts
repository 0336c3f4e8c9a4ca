// The approval a Slack message links to (contract section 19, "What you see
// is what you approve"), in real headless Chromium: the console's route
// `#/runs/<run>/approvals/<approval>` shows that approval in focus, its
// arguments whole as the engine redacted them (the part Slack had to cut
// included), and every path the engine withheld with its length.
import { describe, expect, it } from "vitest";
import { useConsoleSuite } from "../support/browser-session";
import { screenshot, waitForSummary } from "../support/console-browser";

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

  // Many short lines, a redacted api_key at the very end, and one value long enough to fold.
  const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`setting_${String(i).padStart(2, "0")}`, `value ${i}`]));
  const LONG = `${"0123456789".repeat(60)}end`;
  let wide: { runId: string; approvalId: string } | undefined;

  for (const viewport of ["desktop", "phone"] as const) {
    it(`shows the arguments whole, nothing clipped below a fold, and a long value folded behind "show all" (${viewport})`, async () => {
      if (wide === undefined) {
        const { run_id: runId } = await ui.engine.trigger({
          message: "a dashboard with many settings",
          channel_id: "C-hidden",
          script: [
            {
              tool_calls: [
                { tool_name: CREATE, tool_call_id: "many-1", arguments: { ...many, notes: LONG, api_key: "sk-live-not-shown" } },
              ],
            },
          ],
        });
        const [approval] = await waitForSummary(
          ui.engine,
          runId,
          (s) => (s.pending_approvals.length === 1 ? s.pending_approvals : undefined),
          UI_TIMEOUT_MS,
        );
        wide = { runId, approvalId: approval!.approval_id };
      }
      const page = viewport === "phone" ? ui.phone : ui.page;
      await page.goto(`${ui.stack.server.url}/console#/runs/${encodeURIComponent(wide.runId)}`);
      const figure = page.locator('[data-tool-call-id="many-1"] figure.json');
      await figure.waitFor({ timeout: UI_TIMEOUT_MS });
      // No inner scroll box: the figure is as tall as its text, and the last line (the redacted api_key) lies inside it.
      const box = await figure.evaluate((f) => {
        const pre = f.querySelector("pre")!;
        return {
          scroll: f.scrollHeight,
          client: f.clientHeight,
          figureBottom: f.getBoundingClientRect().bottom,
          preBottom: pre.getBoundingClientRect().bottom,
        };
      });
      expect(box.scroll).toBeLessThanOrEqual(box.client);
      expect(box.preBottom).toBeLessThanOrEqual(box.figureBottom);
      const pre = figure.locator("pre");
      expect(await pre.innerText()).toContain('"api_key": "[redacted]"');
      expect(await pre.innerText()).toContain('"setting_29": "value 29"');
      // The long value is folded in plain sight: its start, and a button saying how much there is.
      const toggle = figure.getByRole("button", { name: `show all ${LONG.length} characters` });
      expect(await toggle.isVisible()).toBe(true);
      expect(await pre.innerText()).not.toContain(LONG);
      expect(await pre.innerText()).toContain(LONG.slice(0, 100));
      await screenshot(page, `arguments-folded-${viewport}`);
      await toggle.click();
      await expect.poll(() => pre.innerText(), { timeout: UI_TIMEOUT_MS }).toContain(JSON.stringify(LONG));
      expect(await figure.getByRole("button", { name: "show less" }).getAttribute("aria-expanded")).toBe("true");
      expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
      await screenshot(page, `arguments-unfolded-${viewport}`);
      if (viewport === "phone") await ui.engine.cancel(wide.runId);
      expect(pageErrors).toEqual([]);
    });
  }
});
