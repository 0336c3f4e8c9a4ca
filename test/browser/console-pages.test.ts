// The console's pages in real headless Chromium (contract sections 16 and
// 20): the hash router renders for any fragment without an uncaught error,
// a run's page is one timeline in event order with outcome states in their
// own words and colours, an unknown run is "not found", and the runs list and
// the navigation show what waits on a person.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { EngineClient } from "../../src/client";
import { type ConsoleBrowser, type ConsoleStack, launchConsoleBrowser, signIn, startConsoleStack } from "../support/console-browser";

const NAME = "lin";
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

let stack: ConsoleStack;
let browser: ConsoleBrowser;
let page: Page;
let engine: EngineClient;
/** Uncaught exceptions of the page (the console must never throw one). */
const pageErrors: Error[] = [];

const consoleUrl = (hash = "") => `${stack.server.url}/console${hash}`;

beforeAll(async () => {
  stack = await startConsoleStack();
  engine = new EngineClient({ baseUrl: stack.server.url, token: stack.server.token });
  browser = await launchConsoleBrowser();
  page = browser.page;
  page.on("pageerror", (err) => pageErrors.push(err));
  await signIn(page, stack.server.url, stack.server.token, NAME);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.sequential("the console's pages in Chromium", () => {
  it("renders for any fragment: a malformed escape, an unknown page, and then a real page, with no uncaught error", async () => {
    await page.goto(consoleUrl("#/runs/%E0%A4%A"));
    await page.getByRole("heading", { name: /Run %E0%A4%A/ }).waitFor({ timeout: UI_TIMEOUT_MS });
    await page.goto(consoleUrl("#/%E0%A4%A/%"));
    await page.getByRole("heading", { name: "No such page" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await page.locator("main").innerText()).toContain("#%E0%A4%A/%");
    await page.goto(consoleUrl("#/runs"));
    await page.getByRole("heading", { name: "Runs" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(pageErrors).toEqual([]);
  });
});
