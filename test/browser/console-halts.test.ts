// The halt banner and the Halt control (contract section 23) in real headless
// Chromium against wrangler dev, at desktop (1280 px) and on a 390 px phone:
// an admin engages a halt from the control on a console page; every page then
// shows the banner naming the halt, its scope and reason, and an approve on a
// call in scope is refused with the halt named, changing nothing; a viewer
// sees the banner but no control; once released, the banner goes.
import { afterAll, describe, expect, it } from "vitest";
import { useConsoleSuite } from "../support/browser-session";
import { launchConsoleBrowser, screenshot, signIn, waitForSummary } from "../support/console-browser";

const CREATE = "mcp__demo__create_dashboard";
/** Every wait for the page: long enough for a loaded 2-core machine (the banner polls every 2 s), never a production default. */
const UI_TIMEOUT_MS = 15_000;
/** The console's pages: their nav entries' data-page and their fragment (the audit page is an admin's). */
const PAGES = [
  ["waiting", ""],
  ["runs", "runs"],
  ["approvals", "approvals"],
  ["questions", "questions"],
  ["outcomes", "outcomes"],
  ["pool", "pool"],
  ["audit", "audit"],
] as const;
const PHONE_WIDTH = 390;

const pageErrors: Error[] = [];
const ui = useConsoleSuite({ pageErrors });
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

/** How the banner sits on a page: its text, and whether it and the page fit the viewport's width. */
function bannerLayout(page: import("playwright-core").Page) {
  return page.evaluate(() => {
    const banner = document.querySelector<HTMLElement>(".halt-banner");
    const rect = banner?.getBoundingClientRect();
    return {
      text: banner?.innerText ?? null,
      role: banner?.getAttribute("role") ?? null,
      left: rect?.left ?? NaN,
      right: rect?.right ?? NaN,
      viewport: document.documentElement.clientWidth,
      pageWidth: document.documentElement.scrollWidth,
      /** What sticks out past the viewport's right edge, if anything (for the failure's message). */
      wide: Array.from(document.querySelectorAll<HTMLElement>("body *"))
        .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth || el.scrollWidth > el.clientWidth + 1)
        .slice(0, 8)
        .map(
          (el) =>
            `${el.tagName.toLowerCase()}.${el.className} right ${Math.round(el.getBoundingClientRect().right)} scroll ${el.scrollWidth}/${el.clientWidth}`,
        ),
    };
  });
}

describe("the halt banner and the Halt control in Chromium", () => {
  let haltId = "";
  let runId = "";

  it("an admin engages a halt from the control; every page shows the banner, at desktop and at 390 px", async () => {
    const started = await ui.engine.trigger({
      message: "halted in the console",
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "h-1", arguments: { title: "halted" } }] }, { text: "done" }],
    });
    runId = started.run_id;
    await waitForSummary(ui.engine, runId, (s) => (s.pending_approvals.length === 1 ? true : undefined), UI_TIMEOUT_MS);

    const { page } = ui;
    await page.goto(`${ui.stack.server.url}/console#/`);
    await page.getByRole("navigation", { name: "Console pages" }).waitFor({ timeout: UI_TIMEOUT_MS });
    const control = page.locator("details.halt-control");
    await control.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await page.locator(".halt-banner").count()).toBe(0);

    await control.locator("summary").click();
    await control.getByLabel("Scope", { exact: true }).fill(`tool:${CREATE}`);
    await control.getByLabel("Reason", { exact: true }).fill("dashboards look wrong");
    await control.getByRole("button", { name: "Halt", exact: true }).click();
    const said = control.getByRole("status");
    await expect.poll(() => said.innerText(), { timeout: UI_TIMEOUT_MS }).toMatch(/^Halt halt_[0-9A-Z]{26} engaged\.$/);
    haltId = /halt_[0-9A-Z]{26}/.exec(await said.innerText())![0];
    const listed = (await ui.engine.listHalts({ status: "active" })).halts;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      halt_id: haltId,
      scope: `tool:${CREATE}`,
      reason: "dashboards look wrong",
      engaged_by: "token:root",
      status: "active",
    });

    for (const [viewport, onPage] of [
      ["desktop", ui.page],
      ["phone", ui.phone],
    ] as const) {
      for (const [name, fragment] of PAGES) {
        await onPage.goto(`${ui.stack.server.url}/console#/${fragment}`);
        await onPage.locator(`nav a[data-page="${name}"][aria-current="page"]`).waitFor({ timeout: UI_TIMEOUT_MS });
        const banner = onPage.locator(".halt-banner");
        await banner.waitFor({ timeout: UI_TIMEOUT_MS });
        const layout = await bannerLayout(onPage);
        const where = `${viewport} #/${fragment}`;
        expect(layout.role, where).toBe("alert");
        for (const part of [haltId, `tool:${CREATE}`, "dashboards look wrong", "halted"]) expect(layout.text, where).toContain(part);
        // Within the viewport, and the page does not scroll sideways for it.
        expect(layout.left, where).toBeGreaterThanOrEqual(0);
        expect(layout.right, where).toBeLessThanOrEqual(layout.viewport);
        expect(layout.pageWidth, `${where}: ${layout.wide.join(", ")}`).toBeLessThanOrEqual(layout.viewport);
        // The control follows the session's roles (read once per page load), so it may come a moment after the banner.
        await onPage.locator("details.halt-control").waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      }
      if (viewport === "phone") expect(await onPage.evaluate(() => window.innerWidth)).toBe(PHONE_WIDTH);
      await screenshot(onPage, `halt-banner-${viewport}`);
    }
    expect(pageErrors).toEqual([]);
  });

  it("an approve in the console on a halted call is refused naming the halt, and changes nothing", async () => {
    const { page } = ui;
    await page.goto(`${ui.stack.server.url}/console#/runs/${encodeURIComponent(runId)}`);
    const form = page.getByRole("form", { name: `Decide ${CREATE}` });
    await form.waitFor({ timeout: UI_TIMEOUT_MS });
    await form.getByRole("button", { name: "Approve" }).click();
    const error = page.locator('[data-tool-call-id="h-1"] p.error');
    await error.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await error.innerText()).toContain(haltId);
    expect((await ui.engine.summary(runId)).pending_approvals).toHaveLength(1);
    expect(pageErrors).toEqual([]);
  });

  it("a viewer sees the banner but no Halt control", async () => {
    const { token } = await ui.engine.createToken({ name: `viewer-${Date.now().toString(36)}`, roles: ["viewer"] });
    for (const viewport of [undefined, { width: PHONE_WIDTH, height: 844 }]) {
      const viewer = await launchConsoleBrowser(viewport);
      closers.push(() => viewer.close());
      viewer.page.on("pageerror", (err) => pageErrors.push(err));
      await signIn(viewer.page, ui.stack.server.url, token);
      await viewer.page.goto(`${ui.stack.server.url}/console#/runs`);
      await viewer.page.locator(".halt-banner").waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await viewer.page.locator(".halt-banner").innerText()).toContain(haltId);
      // The page is drawn (the viewer's roles are known) and still offers no control.
      await viewer.page.locator(".who span").waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await viewer.page.locator("details.halt-control").count()).toBe(0);
      await viewer.close();
      closers.pop();
    }
    expect(pageErrors).toEqual([]);
  });

  it("once released, the banner goes from the open pages", async () => {
    await ui.page.goto(`${ui.stack.server.url}/console#/runs`);
    await ui.phone.goto(`${ui.stack.server.url}/console#/approvals`);
    for (const onPage of [ui.page, ui.phone]) await onPage.locator(".halt-banner").waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.engine.releaseHalt(haltId)).toMatchObject({ halt_id: haltId, status: "released" });
    for (const onPage of [ui.page, ui.phone]) {
      await expect.poll(() => onPage.locator(".halt-banner").count(), { timeout: UI_TIMEOUT_MS }).toBe(0);
      expect(await onPage.locator("details.halt-control").isVisible()).toBe(true);
    }
    expect(pageErrors).toEqual([]);
  });
});
