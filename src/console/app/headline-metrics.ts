// The pool page's headline metrics (contract section 22): the few series an
// on-call engineer alerts on, read from GET /api/metrics. The exposition is
// parsed here by hand: the console needs "name{labels} value" lines only
// (no types, help or timestamps), and a Prometheus parser library would be
// most of the console's bundle for that.

/** One sample per series key: the name, with its labels as written (`aee_mutations{state="outcome_unknown"}`). */
export function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)/.exec(line);
    if (!match || line.startsWith("#")) continue;
    const value = Number(match[2]);
    if (!Number.isNaN(value)) samples.set(match[1] ?? "", value);
  }
  return samples;
}

export interface Headline {
  label: string;
  value: string;
  /** The figure is one to act on (something waits on a person, or failed). */
  alert: boolean;
}

const seconds = (v: number) => (v < 60 ? `${Math.round(v)} s` : v < 3_600 ? `${Math.round(v / 60)} min` : `${(v / 3_600).toFixed(1)} h`);

/**
 * What the alert rules in docs/alerts.yml watch, in words, flagged where a gauge is past the
 * rule's threshold; a series the engine did not send is left out.
 */
export function headlines(samples: Map<string, number>): Headline[] {
  const rows: [label: string, key: string, format: (v: number) => string, alertAbove: number][] = [
    ["runs active", "aee_runs_active", String, Number.POSITIVE_INFINITY],
    ["approvals pending", "aee_approvals_pending", String, Number.POSITIVE_INFINITY],
    ["oldest pending approval", "aee_approval_oldest_pending_seconds", seconds, 900],
    ["questions pending", "aee_inputs_pending", String, Number.POSITIVE_INFINITY],
    ["outcomes unknown", 'aee_mutations{state="outcome_unknown"}', String, 0],
    ["oldest unknown outcome", "aee_mutation_oldest_unknown_seconds", seconds, 0],
    // Counters since the deployment began: docs/alerts.yml alerts on their increase, which one scrape cannot show.
    ["pool refusals (total)", "aee_storage_pool_rejected_total", String, Number.POSITIVE_INFINITY],
    ["Slack posts pending", "aee_slack_posts_pending", String, 50],
    ["Slack posts failed (total)", "aee_slack_posts_failed_total", String, Number.POSITIVE_INFINITY],
  ];
  return rows.flatMap(([label, key, format, alertAbove]) => {
    const value = samples.get(key);
    return value === undefined ? [] : [{ label, value: format(value), alert: value > alertAbove }];
  });
}
