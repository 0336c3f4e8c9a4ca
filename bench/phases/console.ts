// Phase 9, the operator console (issue 13): event appended → visible in the
// run's timeline page, p50/p99, in real headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core, flags as the browser tests'),
// signed in to /console of the bench Worker. Skipped, with a printed line,
// where Chromium is missing.
import { existsSync } from "node:fs";
import { performance } from "node:perf_hooks";
import type { Page } from "playwright-core";
import { CHROMIUM, launchConsoleBrowser, signIn } from "../../test/support/console-browser";
import { log, range, sleep, sortedCopy } from "../http-client";
import { withServer } from "../servers";
import { CONSOLE_CLOCK_PROBES, CONSOLE_INTERVAL_MS, CONSOLE_SAMPLES, CONSOLE_WARMUP, DELIVERY_TIMEOUT_MS } from "../settings";
import { createRun, engine } from "../targets";

/** 32+ characters, as the config requires; bench-only. */
const CONSOLE_SECRET = "bench-console-session-secret-0123456789abcdef";

export type ConsoleLatency =
  | { kind: "skipped"; reason: string }
  | {
      kind: "measured";
      /** Append request sent → the event's <li> added to the page's DOM (MutationObserver), ms, sorted. */
      visible: number[];
      /** The append request's own round trip, ms, sorted. */
      appendRtt: number[];
      /** Half the round trip of the best clock-offset probe: how far off the page's clock may be from this process's, ms. */
      clockUncertaintyMs: number;
    };

declare global {
  interface Window {
    /** Label → when its message first appeared in the DOM (page wall clock: timeOrigin + now(), ms). */
    __benchSeen?: Record<string, number>;
  }
}

/**
 * Runs in the page: records when each assistant message of the timeline
 * (`ol.timeline > li[data-kind=message|final]`) whose text starts with a label
 * (`c<n>_`) first enters the DOM, as window.__benchSeen[label] (the page's
 * wall clock, timeOrigin + now(), ms).
 */
const OBSERVER_SCRIPT = `(() => {
  const seen = {};
  window.__benchSeen = seen;
  const record = (el) => {
    if (!el.matches('ol.timeline > li[data-kind="message"], ol.timeline > li[data-kind="final"]')) return;
    const label = /^(c\\d+_)/.exec(el.querySelector(".said")?.textContent || "")?.[1];
    if (label !== undefined && seen[label] === undefined) seen[label] = performance.timeOrigin + performance.now();
  };
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      m.addedNodes.forEach((node) => {
        if (!(node instanceof Element)) return;
        if (node.matches("li")) record(node);
        node.querySelectorAll("li").forEach(record);
      });
    }
  }).observe(document.body, { childList: true, subtree: true });
})()`;

/** This process's wall clock with sub-millisecond resolution, ms. */
const wallNow = () => performance.timeOrigin + performance.now();

/**
 * The page's wall clock minus this process's, ms, from the probe with the
 * shortest round trip (the page's reading is taken to be at the midpoint).
 * Both are wall clocks on one machine, so the offset is near zero; measuring
 * it keeps a clock adjustment between the two processes' starts out of the
 * figures.
 */
async function clockOffset(page: Page): Promise<{ offset: number; uncertainty: number }> {
  let best = { offset: 0, uncertainty: Number.POSITIVE_INFINITY };
  for (const _ of range(CONSOLE_CLOCK_PROBES)) {
    const before = wallNow();
    const pageAt = await page.evaluate(() => performance.timeOrigin + performance.now());
    const after = wallNow();
    const uncertainty = (after - before) / 2;
    if (uncertainty < best.uncertainty) best = { offset: pageAt - (before + after) / 2, uncertainty };
  }
  return best;
}

/**
 * One running run (kept running by a long scripted turn), its timeline page
 * open (`#/runs/{id}`, the page's one SSE stream), and a MutationObserver in
 * the page recording when each timeline message whose text starts with a
 * label first enters the DOM. Then one synthetic assistant_message at a time
 * through the bench Worker's append route (RunObject's own append and
 * fan-out): the time is taken just before the append request is sent, and
 * the page's record of that label is read back (page.waitForFunction) and
 * shifted by the measured clock offset.
 */
async function measureConsole(page: Page, url: string, token: string, appendOne: (label: string) => Promise<void>, runId: string) {
  await signIn(page, url, token);
  await page.goto(`${url}/console#/runs/${runId}`);
  await page.getByRole("heading", { name: new RegExp(`Run ${runId}`) }).waitFor({ timeout: DELIVERY_TIMEOUT_MS });
  // A string, not a function: tsx (esbuild keepNames) would wrap the function's inner functions in a
  // `__name` helper that exists in this process, not in the page.
  await page.evaluate(OBSERVER_SCRIPT);
  const clock = await clockOffset(page);
  const visible: number[] = [];
  const appendRtt: number[] = [];
  for (const i of range(CONSOLE_WARMUP + CONSOLE_SAMPLES)) {
    const label = `c${i}_`;
    const sent = wallNow();
    await appendOne(label);
    const rtt = wallNow() - sent;
    const shownAt = await page.waitForFunction((l) => window.__benchSeen?.[l], label, { timeout: DELIVERY_TIMEOUT_MS });
    const pageAt = (await shownAt.jsonValue()) as number;
    await sleep(CONSOLE_INTERVAL_MS);
    if (i < CONSOLE_WARMUP) continue;
    visible.push(pageAt - clock.offset - sent);
    appendRtt.push(rtt);
  }
  return { visible: sortedCopy(visible), appendRtt: sortedCopy(appendRtt), clockUncertaintyMs: clock.uncertainty };
}

/** Phase 9 on its own server with the console on; skipped where /usr/bin/chromium is missing. */
export async function consolePhase(): Promise<ConsoleLatency> {
  if (!existsSync(CHROMIUM)) {
    const reason = `${CHROMIUM} is missing (Debian's chromium package): the console phase is skipped`;
    log(`9. console: ${reason}`);
    return { kind: "skipped", reason };
  }
  return withServer(
    async (server, client) => {
      log(`9. console: ${CONSOLE_WARMUP} + ${CONSOLE_SAMPLES} events appended one at a time, watched in headless Chromium`);
      const runId = await createRun(client);
      const browser = await launchConsoleBrowser();
      try {
        const measured = await measureConsole(
          browser.page,
          server.url,
          server.token,
          (label) => engine.append(client, runId, 1, label),
          runId,
        );
        return { kind: "measured", ...measured };
      } finally {
        await browser.close();
        await engine.finish(client, runId);
      }
    },
    { CONSOLE_SESSION_SECRET: CONSOLE_SECRET },
  );
}
