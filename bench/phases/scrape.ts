// Phase 11, the metrics scrape (issue 22, contract section 22): GET
// /api/metrics over 10 and then over 10,000 indexed runs (written straight
// into D1 by the bench Worker's /bench/index/runs), timed from just before
// the request to the end of the body, one scrape at a time after a warm-up.
// Also read from each answer: the scrape's own D1 statements and rows read,
// which must not grow with the runs.
import { log, percentile } from "../http-client";
import { withServer } from "../servers";
import { SCRAPE_REPEATS } from "../settings";

interface ScrapeAt {
  runs: number;
  p50Ms: number;
  p99Ms: number;
  statements: number;
  rowsRead: number;
}

export interface Scrape {
  small: ScrapeAt;
  large: ScrapeAt;
}

const sampleOf = (text: string, name: string): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`the scrape has no ${name}`);
  return Number(line.slice(name.length + 1));
};

async function timeScrapes(url: string, token: string, runs: number): Promise<ScrapeAt> {
  const scrape = async () => {
    const started = performance.now();
    const res = await fetch(`${url}/api/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET /api/metrics: ${res.status} ${text.slice(0, 200)}`);
    return { ms: performance.now() - started, text };
  };
  await scrape(); // warm-up
  const times: number[] = [];
  let last = "";
  for (let i = 0; i < SCRAPE_REPEATS; i++) {
    const { ms, text } = await scrape();
    times.push(ms);
    last = text;
  }
  times.sort((a, b) => a - b);
  return {
    runs,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    statements: sampleOf(last, "aee_scrape_d1_statements"),
    rowsRead: sampleOf(last, "aee_scrape_d1_rows_read"),
  };
}

export function scrapePhase(): Promise<Scrape> {
  return withServer(async (server) => {
    const seed = async (count: number) => {
      const res = await fetch(`${server.url}/bench/index/runs?count=${count}`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}` },
      });
      if (res.status !== 200) throw new Error(`seeding ${count} runs: ${res.status} ${await res.text()}`);
    };
    log(`11. metrics scrape: ${SCRAPE_REPEATS} scrapes over 10 indexed runs, then over 10,000`);
    await seed(10);
    const small = await timeScrapes(server.url, server.token, 10);
    await seed(9_990);
    const large = await timeScrapes(server.url, server.token, 10_000);
    return { small, large };
  });
}

/** The phase's lines for the report. */
export function scrapeReport(scrape: Scrape): string {
  const line = (s: ScrapeAt) =>
    `  ${String(s.runs).padStart(6)} runs: p50 ${s.p50Ms.toFixed(1)} ms, p99 ${s.p99Ms.toFixed(1)} ms, ${s.statements} D1 statements, ${s.rowsRead} rows read`;
  const same = scrape.small.statements === scrape.large.statements && scrape.large.rowsRead <= scrape.small.rowsRead;
  return [
    "",
    "GET /api/metrics (issue 22; goal: the same D1 statements over 10,000 runs as over 10, at most 8 and 1,000 rows)",
    line(scrape.small),
    line(scrape.large),
    `  ${same && scrape.large.statements <= 8 && scrape.large.rowsRead <= 1_000 ? "met" : "NOT met"}`,
    "",
  ].join("\n");
}
