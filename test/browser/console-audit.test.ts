// The console's audit log (contract section 18) in real headless Chromium
// against wrangler dev: an admin reads GET /api/audit through the page,
// filters it by action and principal (kept in the URL) and pages back with
// the cursor; a viewer-only token sees why it may not (and the page sends no
// audit read); and behind Cloudflare Access the console works on Access's
// CF_Authorization cookie alone, verified against a loopback JWKS stand-in
// (test/support/jwks-server.ts) with keys jose made here, and signs out
// through Access's own logout.
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineClient } from "../../src/client";
import { type ConsoleStack, launchConsoleBrowser, signIn, startConsoleStack } from "../support/console-browser";
import { type JwksServer, startJwksServer } from "../support/jwks-server";

const AUD = "aud-console-audit-test";
const UI_TIMEOUT_MS = 15_000;
/** Past one page (50) of token.create entries, so the cursor is needed. */
const TOKENS_MADE = 55;

let jwks: JwksServer;
let signingKey: CryptoKey;
let stack: ConsoleStack;
let engine: EngineClient;
let viewerToken: string;

async function accessJwt(email: string, aud = AUD): Promise<string> {
  const now = Math.floor(Date.now() / 1_000);
  return new SignJWT({ email })
    .setProtectedHeader({ alg: "RS256", kid: "k-console" })
    .setIssuer(jwks.url)
    .setAudience([aud])
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(signingKey);
}

/** Opens a page that records every /api/audit request it sends. */
async function withBrowser(run: (page: Page, auditReads: string[]) => Promise<void>, cookie?: string): Promise<void> {
  const browser = await launchConsoleBrowser();
  const auditReads: string[] = [];
  browser.page.on("request", (req) => {
    if (new URL(req.url()).pathname === "/api/audit") auditReads.push(req.url());
  });
  try {
    if (cookie !== undefined) {
      await browser.context.addCookies([{ name: "CF_Authorization", value: cookie, url: stack.server.url }]);
    }
    await run(browser.page, auditReads);
  } finally {
    await browser.close();
  }
}

const rows = (page: Page) => page.locator("table.audit tbody tr");

beforeAll(async () => {
  jwks = await startJwksServer();
  const pair = await generateKeyPair("RS256", { extractable: true });
  signingKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: "k-console", alg: "RS256", use: "sig" };
  await fetch(`${jwks.url}/_control/keys`, { method: "POST", body: JSON.stringify({ keys: [jwk] }) });
  stack = await startConsoleStack({
    ACCESS_TEAM_DOMAIN: jwks.url,
    ACCESS_AUD: AUD,
    ACCESS_ROLES: JSON.stringify({ "ada@example.com": ["admin"], "bob@example.com": ["viewer"] }),
  });
  engine = new EngineClient({ baseUrl: stack.server.url, token: stack.server.token });
  viewerToken = (await engine.createToken({ name: "looker", roles: ["viewer"] })).token;
  for (let i = 0; i < TOKENS_MADE - 1; i++) await engine.createToken({ name: `bulk-${i}`, roles: ["viewer"] });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  await jwks?.stop();
});

describe.sequential("the console's audit log in Chromium", () => {
  it("an admin lists the entries, filters by action and principal in the URL, and pages back with the cursor", async () => {
    await withBrowser(async (page) => {
      await signIn(page, stack.server.url, stack.server.token);
      await page.getByRole("navigation", { name: "Console pages" }).getByRole("link", { name: "Audit log" }).click();
      await page.getByRole("heading", { name: "Audit log" }).waitFor();
      // Newest first: this session's own sign-in leads.
      const first = rows(page).first();
      await expect.poll(() => first.getAttribute("data-action"), { timeout: UI_TIMEOUT_MS }).toBe("session.create");
      expect(await first.textContent()).toContain("token:root");

      await page.getByLabel("Action").selectOption("token.create");
      await expect.poll(() => page.evaluate(() => location.hash)).toBe("#/audit?action=token.create");
      await expect.poll(() => rows(page).count(), { timeout: UI_TIMEOUT_MS }).toBe(50);
      const actions = await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-action")));
      expect(new Set(actions)).toEqual(new Set(["token.create"]));
      // The newest token first; the oldest ones are on the next page.
      expect(await rows(page).first().textContent()).toContain(`token:bulk-${TOKENS_MADE - 2}`);
      await page.getByRole("button", { name: "Older entries" }).click();
      await expect.poll(() => rows(page).count(), { timeout: UI_TIMEOUT_MS }).toBe(TOKENS_MADE - 50);
      expect(await rows(page).last().textContent()).toContain("token:looker");
      expect(await page.getByRole("button", { name: "Older entries" }).count()).toBe(0);
      await page.getByRole("button", { name: "Newest entries" }).click();
      await expect.poll(() => rows(page).count(), { timeout: UI_TIMEOUT_MS }).toBe(50);

      await page.getByLabel("Action").selectOption("");
      await page.getByLabel("Principal").fill("token:nobody");
      await page.getByRole("button", { name: "Filter" }).click();
      await page.getByText("No audit entry matches these filters.").waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await page.evaluate(() => location.hash)).toBe("#/audit?principal=token%3Anobody");
    });
  });

  it("a viewer-only token sees no Audit log link and a clear refusal at its URL, and the page asks nothing of the API; no reconcile form either", async () => {
    await withBrowser(async (page, auditReads) => {
      await signIn(page, stack.server.url, viewerToken);
      const nav = page.getByRole("navigation", { name: "Console pages" });
      await nav.getByRole("link", { name: "Runs" }).waitFor();
      expect(await nav.getByRole("link", { name: "Audit log" }).count()).toBe(0);
      await page.goto(`${stack.server.url}/console#/audit`);
      const refusal = page.locator("[data-refusal=admin]");
      await refusal.waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await refusal.textContent()).toContain("token:looker lacks the admin role");
      expect(await rows(page).count()).toBe(0);
      expect(auditReads).toEqual([]);
      // The reconcile form is refused up front the same way: no form the API would refuse.
      await page.goto(`${stack.server.url}/console#/outcomes`);
      const notReconciler = page.locator("[data-refusal=reconciler]");
      await notReconciler.waitFor({ timeout: UI_TIMEOUT_MS });
      expect(await notReconciler.textContent()).toContain("token:looker lacks it");
      expect(await page.locator("form.reconcile").count()).toBe(0);
    });
  });

  it("behind Access the console works on the CF_Authorization cookie alone: an admin user reads the log", async () => {
    await withBrowser(
      async (page) => {
        await page.goto(`${stack.server.url}/console#/audit`);
        await page.getByText("signed in as access:ada@example.com").waitFor({ timeout: UI_TIMEOUT_MS });
        expect(await page.getByLabel(/API token/).count()).toBe(0);
        await page.getByLabel("Principal").fill("token:root");
        await page.getByRole("button", { name: "Filter" }).click();
        await expect.poll(() => rows(page).count(), { timeout: UI_TIMEOUT_MS }).toBe(50);
        const principals = await rows(page).evaluateAll((trs) => trs.map((tr) => tr.querySelector("[data-label=Principal]")?.textContent));
        expect(new Set(principals)).toEqual(new Set(["token:root"]));
        // No console session to end here: signing out is Access's own logout on this hostname.
        const leaving = page.waitForRequest((req) => new URL(req.url()).pathname === "/cdn-cgi/access/logout");
        await page.getByRole("button", { name: "Sign out" }).click();
        await leaving;
      },
      await accessJwt("Ada@Example.com"),
    );
  });

  it("behind Access a viewer user is refused the log, and a cookie for another audience gets the sign-in page", async () => {
    await withBrowser(
      async (page) => {
        await page.goto(`${stack.server.url}/console#/audit`);
        const refusal = page.locator("[data-refusal=admin]");
        await refusal.waitFor({ timeout: UI_TIMEOUT_MS });
        expect(await refusal.textContent()).toContain("access:bob@example.com lacks the admin role");
      },
      await accessJwt("bob@example.com"),
    );
    await withBrowser(
      async (page) => {
        await page.goto(`${stack.server.url}/console`);
        await page.getByLabel(/API token/).waitFor({ timeout: UI_TIMEOUT_MS });
      },
      await accessJwt("ada@example.com", "another-application"),
    );
  });
});
