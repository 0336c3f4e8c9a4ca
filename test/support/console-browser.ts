// Real headless Chromium (Debian's /usr/bin/chromium) driven by
// playwright-core, for the console's browser tests and `npm run screenshots`:
// a fresh profile per launch, and the operator console's own Worker (wrangler
// dev with the console on and decision windows long enough for a browser)
// beside the demo MCP server.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { EngineClient, type RunSummary } from "../../src/client";
import { e2eVars } from "../e2e/global-setup";
import { type DemoMcpProcess, startDemoMcpProcess } from "./demo-mcp-process";
import { startWorkerServer, type WorkerServer } from "./worker-server";

export const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** The phone the console is judged on (contract section 16, issue 29): a 390 x 844 CSS-pixel viewport. */
const PHONE_VIEWPORT = { width: 390, height: 844 };
/** Where the browser suites' screenshots go (TEST_OUTPUT_DIR overrides it; not committed). */
const SCREENSHOT_DIR = resolve(process.env.TEST_OUTPUT_DIR ?? resolve(import.meta.dirname, "../../test-output"), "console");

/** Saves a full-page PNG of `page` as `<name>.png` in the screenshot directory; answers its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name.replace(/[^A-Za-z0-9_.-]/g, "_")}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** 32+ characters, as the config requires; test-only. */
const CONSOLE_SECRET = "browser-test-console-secret-0123456789abcdef";

export interface ConsoleStack {
  demo: DemoMcpProcess;
  server: WorkerServer;
  stop(): Promise<void>;
}

/**
 * The Worker for the console: the e2e settings, plus the console's secret and
 * decision windows of a minute (a person clicking in a browser is slower than a
 * test client; nothing here waits for them to pass). `vars` adds settings
 * (Cloudflare Access's, for one).
 */
/** Settings over e2eVars, or a function of the demo server's MCP URL that gives them (to add servers beside it). */
type StackVars = Record<string, string> | ((demoMcpUrl: string) => Record<string, string>);

export async function startConsoleStack(given: StackVars = {}): Promise<ConsoleStack> {
  const demo = await startDemoMcpProcess();
  const vars = typeof given === "function" ? given(demo.url) : given;
  try {
    const server = await startWorkerServer({
      ...e2eVars(demo.url),
      HEARTBEAT_INTERVAL_MS: "1000",
      APPROVAL_TIMEOUT_MS: "60000",
      ADMISSION_TIMEOUT_MS: "60000",
      CONSOLE_SESSION_SECRET: CONSOLE_SECRET,
      ...vars,
    });
    return {
      demo,
      server,
      stop: async () => {
        await server.stop();
        await demo.stop();
      },
    };
  } catch (err) {
    await demo.stop();
    throw err;
  }
}

export interface ConsoleBrowser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** Chromium with a fresh --user-data-dir (playwright's persistent context takes the profile directory). */
export async function launchConsoleBrowser(viewport = { width: 1280, height: 900 }): Promise<ConsoleBrowser> {
  const profile = await mkdtemp(join(tmpdir(), "aee-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in through the sign-in page, as a person would. */
/** Signs in with `token`: the session's principal is the token's (contract section 18). */
export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console`);
  await page.getByLabel(/API token/).fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console pages" }).waitFor();
}

/** Polls a run's summary (every 50 ms, up to `timeoutMs`) until `pick` finds something in it. */
export async function waitForSummary<T>(
  engine: EngineClient,
  runId: string,
  pick: (summary: RunSummary) => T | undefined,
  timeoutMs: number,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = pick(await engine.summary(runId));
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting on the summary of ${runId}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What most console tests start from: the stack, a browser (signed in with the API token, unless told not to), and a client for the same server. */
export interface SignedInConsole {
  stack: ConsoleStack;
  browser: ConsoleBrowser;
  /** A desktop viewport (1280 x 900). */
  page: Page;
  /** A second page of the same browser and session at PHONE_VIEWPORT (390 x 844). */
  phone: Page;
  engine: EngineClient;
}

/** How a console suite's stack and browser start; each file keeps its own. */
export interface ConsoleOptions {
  /** Settings over the console stack's (see startConsoleStack). */
  vars?: StackVars;
  /** The page's uncaught errors are pushed here. */
  pageErrors?: Error[];
  /** Attaches the suite's own listeners to the page, before sign-in. */
  watch?: (page: Page) => void;
  /** Sign in with the stack's token (default true; a suite that tests sign-in itself says false). */
  signedIn?: boolean;
}

/** Starts the stack and a browser on it (signed in unless `signedIn: false`). Stops what it started if a step fails. */
export async function openConsole(options: ConsoleOptions): Promise<SignedInConsole> {
  const stack = await startConsoleStack(options.vars);
  let browser: ConsoleBrowser | undefined;
  try {
    const engine = new EngineClient({ baseUrl: stack.server.url, token: stack.server.token });
    browser = await launchConsoleBrowser();
    const page = browser.page;
    const { pageErrors } = options;
    if (pageErrors !== undefined) page.on("pageerror", (err) => pageErrors.push(err));
    options.watch?.(page);
    if (options.signedIn ?? true) await signIn(page, stack.server.url, stack.server.token);
    // The phone shares the context, so the session cookie too: no second sign-in, no second browser.
    const phone = await browser.context.newPage();
    await phone.setViewportSize(PHONE_VIEWPORT);
    if (pageErrors !== undefined) phone.on("pageerror", (err) => pageErrors.push(err));
    options.watch?.(phone);
    return { stack, browser, page, phone, engine };
  } catch (err) {
    await closeSignedInConsole(browser, stack);
    throw err;
  }
}

/** Closes the browser, then stops the stack; either may be missing (a set-up that failed half-way). */
export async function closeSignedInConsole(browser: ConsoleBrowser | undefined, stack: ConsoleStack | undefined): Promise<void> {
  await browser?.close();
  await stack?.stop();
}
