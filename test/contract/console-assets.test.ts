// The console's committed bundle (src/console/generated/console-assets.ts) is
// what scripts/build-console.ts makes from src/console/app now, and what the
// console sends a browser weighs under 150 KB compressed (contract section 16).
import { readFile } from "node:fs/promises";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { GENERATED, renderConsoleAssets } from "../../scripts/build-console";
import { CONSOLE_SCRIPT, CONSOLE_STYLE, SIGN_IN_SCRIPT } from "../../src/console/generated/console-assets";
import { APP_PAGE, SIGN_IN_PAGE } from "../../src/console/pages";

/** Issue 13: the page weight, compressed, under 150 KB. */
const MAX_COMPRESSED_BYTES = 150 * 1024;

describe("the console's bundle", () => {
  it("is committed as a fresh build makes it (run `npm run build:console` after changing src/console/app)", async () => {
    expect(await readFile(GENERATED, "utf8")).toBe(await renderConsoleAssets());
  });

  it("weighs under 150 KB gzip-compressed: the application page with its script and style", () => {
    const weight = [APP_PAGE, CONSOLE_SCRIPT, CONSOLE_STYLE].reduce((sum, text) => sum + gzipSync(text).byteLength, 0);
    expect(weight).toBeLessThan(MAX_COMPRESSED_BYTES);
    expect(weight).toBeGreaterThan(1_000); // the bundle is really there
  });

  it("has no eval or inline handlers that the CSP would block", () => {
    for (const text of [CONSOLE_SCRIPT, SIGN_IN_SCRIPT]) {
      expect(text).not.toMatch(/\beval\(|new Function\(/);
    }
    for (const html of [APP_PAGE, SIGN_IN_PAGE]) {
      expect(html).not.toMatch(/\son[a-z]+=/i);
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/<style/);
    }
  });
});
