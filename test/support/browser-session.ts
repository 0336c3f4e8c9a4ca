// The hooks a console browser suite (test/browser/console*.test.ts) starts
// from: beforeAll opens the console's stack and a Chromium page on it (signed
// in unless the suite says not to; see ConsoleOptions in console-browser.ts),
// afterAll closes both. Kept apart from console-browser.ts, which scripts and
// the benchmark import outside vitest.
import { afterAll, beforeAll } from "vitest";
import { type ConsoleOptions, closeSignedInConsole, openConsole, type SignedInConsole } from "./console-browser";

/** A wrangler dev start and a Chromium launch on a loaded 2-core machine. */
const CONSOLE_START_TIMEOUT_MS = 120_000;

/**
 * Registers a console suite's hooks (call it at the top level of the test
 * file): beforeAll opens the stack and the browser (see ConsoleOptions),
 * afterAll closes them. Read the answer's fields inside tests and hooks.
 */
export function useConsoleSuite(options: ConsoleOptions = {}): SignedInConsole {
  let opened: SignedInConsole | undefined;
  beforeAll(async () => {
    opened = await openConsole(options);
  }, CONSOLE_START_TIMEOUT_MS);
  afterAll(() => closeSignedInConsole(opened?.browser, opened?.stack));
  const need = (): SignedInConsole => {
    if (opened === undefined) throw new Error("the console suite is not started: read it inside a test or hook");
    return opened;
  };
  return {
    get stack() {
      return need().stack;
    },
    get browser() {
      return need().browser;
    },
    get page() {
      return need().page;
    },
    get phone() {
      return need().phone;
    },
    get engine() {
      return need().engine;
    },
  };
}
