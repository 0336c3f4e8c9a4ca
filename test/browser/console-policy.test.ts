// The console's Policy page (contract section 24, section 16) in real
// headless Chromium against wrangler dev, at desktop and at a 390 px phone:
// versions seeded through the API (a tightening one active at once, a
// loosening one proposed with a comment that is HTML) are listed with who,
// when, why and status, the comment as text; a diff of two versions shows the
// changed RFC 6901 path marked as loosening; Approve on the loosening version
// by its author (token:root, no person either) shows the
// `second_person_required` refusal and changes nothing; a viewer sees the
// versions but no Approve; Withdraw withdraws; the shadow and replay sections
// answer from their routes; nothing scrolls sideways at 390 px.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PolicyDocument } from "../../src/client";
import {
  closeSignedInConsole,
  launchConsoleBrowser,
  openConsole,
  type SignedInConsole,
  screenshot,
  signIn,
} from "../support/console-browser";

const UI_TIMEOUT_MS = 20_000;
/** wrangler dev and Chromium on a heavily loaded machine. */
const START_TIMEOUT_MS = 240_000;
const CREATE = "mcp__demo__create_dashboard";
const CHANGED_PATH = `/budget/${CREATE}`;
/** Untrusted text: shown as text, never markup. */
const HTML_COMMENT = '<img src=x onerror="window.__policyXss=1"><b>raise the budget</b>';

let ui: SignedInConsole;
const pageErrors: Error[] = [];
let viewerToken: string;
let loosening: number;

const consoleUrl = (hash = "") => `${ui.stack.server.url}/console${hash}`;
const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
const row = (page: Page, version: number) => page.locator(`table.policy-versions tr[data-version="${version}"]`);

function withBudget(doc: PolicyDocument, n: number): PolicyDocument {
  return { ...doc, budget: { ...doc.budget, [CREATE]: n } };
}

beforeAll(async () => {
  ui = await openConsole({ pageErrors });
  const zero = await ui.engine.getPolicy();
  // Lowering a budget tightens: active at once.
  const tight = await ui.engine.putPolicy({ policy: withBudget(zero.policy, 1), base_version: zero.version, comment: "lower the budget" });
  expect(tight.status).toBe("active");
  // Raising it loosens: proposed, waiting for another person.
  const loose = await ui.engine.putPolicy({ policy: withBudget(zero.policy, 5), base_version: tight.version, comment: HTML_COMMENT });
  expect(loose.status).toBe("proposed");
  expect(loose.loosens.map((l) => l.path)).toEqual([CHANGED_PATH]);
  loosening = loose.version;
  viewerToken = (await ui.engine.createToken({ name: "policy-looker", roles: ["viewer"] })).token;
}, START_TIMEOUT_MS);

afterAll(() => closeSignedInConsole(ui?.browser, ui?.stack));

describe.sequential("the console's Policy page in Chromium", () => {
  it("is in the navigation and lists the versions seeded through the API with who, when, why and status; a comment is text", async () => {
    await ui.page.goto(consoleUrl());
    await ui.page.getByRole("navigation", { name: "Console pages" }).getByRole("link", { name: "Policy" }).click();
    await ui.page.getByRole("heading", { name: "Policy", exact: true }).waitFor();
    const active = ui.page.locator("[data-active-version]");
    await expect.poll(() => active.getAttribute("data-active-version"), { timeout: UI_TIMEOUT_MS }).toBe(String(loosening - 1));
    expect(await active.textContent()).toMatch(/sha256:[0-9a-f]{64}/);

    await row(ui.page, loosening).waitFor({ timeout: UI_TIMEOUT_MS });
    const statuses = await ui.page
      .locator("table.policy-versions tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute("data-version"), tr.getAttribute("data-status")]));
    expect(statuses).toEqual([
      [String(loosening), "proposed"],
      [String(loosening - 1), "active"],
      ["0", "superseded"],
    ]);
    const proposed = row(ui.page, loosening);
    expect(await proposed.locator("[data-label=Who]").textContent()).toBe("token:root");
    expect(await proposed.locator("[data-label=When] time").getAttribute("datetime")).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await proposed.locator("[data-label=Why]").textContent()).toBe(HTML_COMMENT);
    expect(await ui.page.locator(".policy img, .policy b").count()).toBe(0);
    expect(await ui.page.evaluate(() => (window as { __policyXss?: number }).__policyXss)).toBeUndefined();
    // The proposed card says what loosens.
    const card = ui.page.locator(`[data-proposed-version="${loosening}"]`);
    expect(await card.locator(`.loosens li[data-path="${CHANGED_PATH}"]`).textContent()).toContain("1 → 5");
  });

  it("a diff of two versions shows the changed path, from and to, marked as loosening", async () => {
    await row(ui.page, loosening)
      .getByRole("button", { name: `Compare version ${loosening} with the one before` })
      .click();
    const changed = ui.page.locator(`table.policy-diff tr[data-path="${CHANGED_PATH}"]`);
    await changed.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await ui.page.locator("table.policy-diff tbody tr").count()).toBe(1);
    expect(await changed.getAttribute("data-kind")).toBe("changed");
    expect(await changed.getAttribute("data-tone")).toBe("warn");
    expect(await changed.locator("[data-label=From]").textContent()).toBe("1");
    expect(await changed.locator("[data-label=To]").textContent()).toBe("5");
    // Any two versions by number: the settings against the active version.
    await ui.page.getByLabel("From version").fill("0");
    await ui.page.getByLabel("To version").fill(String(loosening - 1));
    await ui.page.getByRole("button", { name: "Compare", exact: true }).click();
    await expect.poll(() => changed.locator("[data-label=From]").textContent(), { timeout: UI_TIMEOUT_MS }).toBe("2");
    expect(await changed.getAttribute("data-tone")).toBeNull();
  });

  it("at 390 px nothing scrolls sideways: versions, the proposed card, a diff, shadow and replay", async () => {
    const phone = ui.phone;
    await phone.goto(consoleUrl("#/policy"));
    await row(phone, loosening).waitFor({ timeout: UI_TIMEOUT_MS });
    await phone.locator(`[data-proposed-version="${loosening}"]`).waitFor({ timeout: UI_TIMEOUT_MS });
    await row(phone, loosening)
      .getByRole("button", { name: /^Compare version/ })
      .click();
    await phone.locator(`table.policy-diff tr[data-path="${CHANGED_PATH}"]`).waitFor({ timeout: UI_TIMEOUT_MS });
    await phone.getByRole("heading", { name: "Replay a candidate" }).waitFor();
    expect(await sideways(phone)).toBe(0);
    // The diff's summary reads as a line across the phone, not a strip one letter wide.
    const summary = await phone.locator("[data-diff-summary]").boundingBox();
    expect(summary?.width ?? 0).toBeGreaterThan(300);
    await screenshot(phone, "policy-phone");
    await screenshot(ui.page, "policy-desktop");
  });

  it("the shadow differences and the replay form answer from GET /api/policy/shadow and POST /api/policy/replay", async () => {
    const shadow = ui.page.locator("section[aria-labelledby=policy-shadow-title]");
    await expect
      .poll(async () => (await shadow.locator("[data-shadow=absent], .empty, table.policy-shadow").count()) > 0, { timeout: UI_TIMEOUT_MS })
      .toBe(true);
    // This server has the route: no shadow version, so nothing recorded.
    expect(await shadow.locator("[data-shadow=absent]").count()).toBe(0);
    await shadow.getByText("No differences recorded.").waitFor({ timeout: UI_TIMEOUT_MS });
    const since = await ui.page.getByLabel("Since").inputValue();
    expect(since).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
    await ui.page.getByRole("button", { name: "Replay", exact: true }).click();
    const replay = ui.page.locator("section[aria-labelledby=policy-replay-title]");
    await expect
      .poll(async () => (await replay.locator("[data-refusal=absent], [data-replay-examined]").count()) > 0, { timeout: UI_TIMEOUT_MS })
      .toBe(true);
    // This server replays: the active document against a week with no calls changes nothing.
    expect(await replay.locator("[data-refusal]").count()).toBe(0);
    expect(await replay.locator("[data-replay-examined]").getAttribute("data-replay-changed")).toBe("0");
  });

  it("a viewer sees the versions and what is proposed, but no Approve or Withdraw, and no replay form", async () => {
    const viewer = await launchConsoleBrowser();
    try {
      await signIn(viewer.page, ui.stack.server.url, viewerToken);
      await viewer.page.goto(consoleUrl("#/policy"));
      const card = viewer.page.locator(`[data-proposed-version="${loosening}"]`);
      await card.waitFor({ timeout: UI_TIMEOUT_MS });
      await row(viewer.page, loosening).waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await viewer.page.getByRole("button", { name: /^Approve/ }).count()).toBe(0);
      expect(await viewer.page.getByRole("button", { name: "Withdraw" }).count()).toBe(0);
      expect(await viewer.page.locator("[data-refusal=admin]").textContent()).toContain("for admins");
      expect(await viewer.page.getByLabel("Candidate policy (JSON)").count()).toBe(0);
    } finally {
      await viewer.close();
    }
  });

  it("Approve on the loosening version by its author shows second_person_required and changes nothing", async () => {
    const card = ui.page.locator(`[data-proposed-version="${loosening}"]`);
    await card.getByRole("button", { name: `Approve version ${loosening}` }).click();
    const refusal = card.locator("[data-refusal=second_person_required]");
    await refusal.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await refusal.textContent()).toContain("second_person_required");
    expect(await refusal.getAttribute("role")).toBe("alert");
    expect((await ui.engine.getPolicyVersion(loosening)).status).toBe("proposed");
    expect((await ui.engine.getPolicy()).version).toBe(loosening - 1);
  });

  it("Withdraw withdraws the proposed version: the card goes and the list says withdrawn", async () => {
    const card = ui.page.locator(`[data-proposed-version="${loosening}"]`);
    await card.getByRole("button", { name: "Withdraw" }).click();
    await expect.poll(() => row(ui.page, loosening).getAttribute("data-status"), { timeout: UI_TIMEOUT_MS }).toBe("withdrawn");
    await expect.poll(() => card.count(), { timeout: UI_TIMEOUT_MS }).toBe(0);
    expect((await ui.engine.getPolicyVersion(loosening)).status).toBe("withdrawn");
    expect(pageErrors).toEqual([]);
  });
});
