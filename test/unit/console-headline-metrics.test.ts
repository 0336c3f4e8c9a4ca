// The console's headline metrics (src/console/app/headline-metrics.ts): samples read
// from the Prometheus text, and a gauge past its alert rule's threshold flagged.
import { describe, expect, it } from "vitest";
import { headlines, parseSamples } from "../../src/console/app/headline-metrics";

const EXPOSITION = [
  "# HELP aee_approvals_pending Approvals waiting for a person.",
  "# TYPE aee_approvals_pending gauge",
  "aee_approvals_pending 3",
  "aee_approval_oldest_pending_seconds 1200.5",
  'aee_mutations{state="outcome_unknown"} 2',
  'aee_mutations{state="completed"} 40',
  "aee_storage_pool_rejected_total 7",
  "aee_slack_posts_pending 4",
  'aee_approval_decision_seconds_bucket{le="+Inf"} 9',
  "",
].join("\n");

describe("headline metrics", () => {
  it("reads each sample by its name and labels, skipping comments", () => {
    const samples = parseSamples(EXPOSITION);
    expect(samples.get("aee_approvals_pending")).toBe(3);
    expect(samples.get('aee_mutations{state="outcome_unknown"}')).toBe(2);
    expect(samples.get('aee_approval_decision_seconds_bucket{le="+Inf"}')).toBe(9);
    expect([...samples.keys()].some((k) => k.startsWith("#"))).toBe(false);
  });

  it("flags gauges past docs/alerts.yml's thresholds, never a counter, and leaves out what was not sent", () => {
    const rows = headlines(parseSamples(EXPOSITION));
    const byLabel = Object.fromEntries(rows.map((r) => [r.label, r]));
    expect(byLabel["oldest pending approval"]).toEqual({ label: "oldest pending approval", value: "20 min", alert: true });
    expect(byLabel["outcomes unknown"]).toMatchObject({ value: "2", alert: true });
    expect(byLabel["approvals pending"]).toMatchObject({ value: "3", alert: false });
    expect(byLabel["pool refusals (total)"]).toMatchObject({ value: "7", alert: false });
    expect(byLabel["Slack posts pending"]).toMatchObject({ value: "4", alert: false });
    expect(byLabel["runs active"]).toBeUndefined();
  });
});
