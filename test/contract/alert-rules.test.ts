// The example alert rules (docs/alerts.yml, contract section 22) name only
// series GET /api/metrics exports (a renamed series fails here), and every
// alert the README's "Operating it" section asks for has a rule.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { metricFamilies } from "../../src/operate/metrics-scrape";

const RULES = readFileSync(new URL("../../docs/alerts.yml", import.meta.url), "utf8");

/** Every sample name a scrape can print (a histogram's _bucket/_sum/_count included). */
function exportedNames(): Set<string> {
  const families = metricFamilies(
    {
      counters: new Map(),
      oldestPendingApprovalAt: null,
      oldestUnknownMutationAt: null,
      pool: { capacity: 16, in_use: 0, waiting: 0, acquired_total: 0, waited_total: 0, rejected_total: 0, reclaimed_total: 0 },
      d1Statements: 3,
      d1RowsRead: 0,
    },
    Date.now(),
  );
  return new Set(families.flatMap((f) => f.samples.map((s) => s.name)));
}

describe("docs/alerts.yml", () => {
  it("names only series the engine exports", () => {
    const named = new Set(RULES.match(/\baee_[a-z0-9_]+/g) ?? []);
    expect(named.size).toBeGreaterThan(5);
    const exported = exportedNames();
    expect([...named].filter((name) => !exported.has(name))).toEqual([]);
  });

  it("alerts on the oldest pending approval, unknown outcomes, pool rejections and failing Slack posts", () => {
    const exprs = [...RULES.matchAll(/^\s*expr: (.+)$/gm)].map((m) => m[1] ?? "");
    for (const series of [
      "aee_approval_oldest_pending_seconds",
      'aee_mutations{state="outcome_unknown"}',
      "aee_storage_pool_rejected_total",
      "aee_slack_posts_failed_total",
    ]) {
      expect(
        exprs.some((e) => e.includes(series)),
        series,
      ).toBe(true);
    }
  });
});
