// The series of GET /api/metrics (contract section 22), declared once: their
// names, types, help texts and histogram buckets. migrations/0011_metrics.sql
// seeds one D1 row per stored series from the same list (a runtime test
// checks they agree); the pool's series come from its stats() RPC and the
// scrape's own two from the scrape.

/** Contract section 22: approval asked → resolved, in seconds. */
export const APPROVAL_DECISION_BUCKETS_S = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600] as const;
/** Contract section 22: approved → tools/call sent, 0.005 to 10 s (Prometheus' default buckets). */
export const APPROVAL_TO_DISPATCH_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

export type MetricType = "gauge" | "counter" | "histogram";

export interface SeriesSpec {
  name: string;
  type: MetricType;
  help: string;
  /** The one label's name, when the series has one. */
  label?: string;
  /** Stored label values (a histogram: its bucket bounds, "+Inf" and "sum"). Absent: the one unlabelled series. */
  values?: readonly string[];
  /**
   * The label's values are not fixed: D1 adds a row per value the first time
   * a run object's batch names it (migrations/0032), so only values that
   * occurred are stored and printed. Bounded by what the run objects send
   * (aee_mutations_limited_total: a configured tool's name).
   */
  openValues?: true;
}

const bucketLabels = (bounds: readonly number[]): string[] => [...bounds.map(String), "+Inf", "sum"];

/** Series kept in D1's metric_counters, in the order the scrape prints them. */
export const STORED_SERIES: readonly SeriesSpec[] = [
  { name: "aee_runs", type: "gauge", help: "Indexed runs by status.", label: "status", values: ["running", "completed", "failed"] },
  { name: "aee_runs_started_total", type: "counter", help: "Runs that ever reached the index." },
  { name: "aee_approvals_pending", type: "gauge", help: "Approvals waiting for a decision." },
  { name: "aee_inputs_pending", type: "gauge", help: "human__ask questions waiting for an answer." },
  {
    name: "aee_mutations",
    type: "gauge",
    help: "Mutation outcome rows by state.",
    label: "state",
    values: ["unresolved", "not_executed", "completed", "outcome_unknown"],
  },
  {
    name: "aee_mutations_settled_total",
    type: "counter",
    help: "Mutation outcome rows that left unresolved, by the state they settled in.",
    label: "state",
    values: ["not_executed", "completed", "outcome_unknown"],
  },
  { name: "aee_slack_posts_pending", type: "gauge", help: "Slack posts waiting in the runs' outboxes." },
  { name: "aee_slack_posts_failed_total", type: "counter", help: "Slack posts given up." },
  { name: "aee_auth_failures_total", type: "counter", help: "Requests refused 401 (no or a wrong credential)." },
  { name: "aee_rate_limited_total", type: "counter", help: "Requests refused 429." },
  { name: "aee_trace_spans_dropped_total", type: "counter", help: "Trace spans dropped after their retry window." },
  {
    name: "aee_mutations_limited_total",
    type: "counter",
    help: "Mutating calls ended not_executed(rate_limited), by tool (contract section 23).",
    label: "tool",
    openValues: true,
  },
  // Contract section 26: notifications waiting in the runs' and the deployment's outboxes; failed attempts.
  { name: "aee_webhooks_pending", type: "gauge", help: "Webhook notifications waiting in the outboxes (per endpoint)." },
  { name: "aee_webhook_failures_total", type: "counter", help: "Webhook delivery attempts that failed (non-2xx, no answer)." },
  {
    name: "aee_policy_shadow_differences_total",
    type: "counter",
    help: "Checks where the shadow policy version's verdict differed from the active one's (contract section 24).",
    label: "check",
    values: ["ask", "decider", "quorum", "checkpoint"],
  },
  {
    name: "aee_approval_decision_seconds",
    type: "histogram",
    help: "Approval asked to resolved.",
    values: bucketLabels(APPROVAL_DECISION_BUCKETS_S),
  },
  {
    name: "aee_approval_to_dispatch_seconds",
    type: "histogram",
    help: "Approved to tools/call sent.",
    values: bucketLabels(APPROVAL_TO_DISPATCH_BUCKETS_S),
  },
];

/** Every (name, label) row metric_counters must hold. */
export function storedRows(): { name: string; label: string }[] {
  return STORED_SERIES.filter((s) => !s.openValues).flatMap((s) => (s.values ?? [""]).map((label) => ({ name: s.name, label })));
}

/** The bucket row one observation of `seconds` lands in (non-cumulative; the scrape sums). */
export function bucketLabel(bounds: readonly number[], seconds: number): string {
  const bound = bounds.find((b) => seconds <= b);
  return bound === undefined ? "+Inf" : String(bound);
}

/** Names a run object may send deltas for (anything else in a batch is ignored by D1's trigger). */
export type DeltaSeries =
  | "aee_slack_posts_pending"
  | "aee_slack_posts_failed_total"
  | "aee_trace_spans_dropped_total"
  | "aee_mutations_limited_total"
  | "aee_approval_decision_seconds"
  | "aee_approval_to_dispatch_seconds";
