// The Prometheus text exposition format, version 0.0.4 (contract section 22):
// `# HELP` / `# TYPE` lines and one sample per line. Written by hand: the
// format is a few lines of string building, and prom-client (the well-kept
// library) is a Node registry with process collectors and timers that does
// not fit a Worker rendering a snapshot it read from D1.
import type { MetricType } from "./metric-series";

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export interface Sample {
  /** The full sample name (a histogram's `_bucket`, `_sum`, `_count` included). */
  name: string;
  labels?: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: MetricType;
  help: string;
  samples: Sample[];
}

/** Label values escape backslash, double quote and newline; HELP escapes backslash and newline. */
const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const escapeHelp = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");

function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(v);
}

export function renderFamilies(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels ?? {});
      const rendered = labels.length === 0 ? "" : `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
      lines.push(`${s.name}${rendered} ${formatValue(s.value)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
