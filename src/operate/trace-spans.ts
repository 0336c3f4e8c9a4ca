// A run's spans (contract section 22), recorded in the run object's SQLite on
// the append path (storage only) and exported later from its alarm through
// src/operate/trace-export.ts: the durable outbox of the trace, like the
// Slack outbox. One trace per run: `run` is the root; `model.turn` and
// `tool.call` are its children; `approval.wait` and `mcp.send` are children of
// their tool call; `slack.post` of the run. Attributes are ids, statuses and
// outcomes only, never arguments, results, questions or answers.
// Hand-written instead of the OpenTelemetry SDK's Tracer: a span here lives
// across object evictions (an approval wait lasts minutes), so its start must
// be a durable row, not an in-memory Span; the SDK's span processors keep
// spans in memory and would lose them on eviction.
import type { SqlLike } from "../stream/event-log";
import type { RunEvent } from "../wire/event-schemas";
import { spanIdOf, traceIdOf } from "./trace-ids";
import type { SqlTable } from "../stream/sql-schema";

export type SpanName = "run" | "model.turn" | "tool.call" | "approval.wait" | "mcp.send" | "slack.post";

export type SpanAttributes = Record<string, string>;

export interface SpanRow {
  key: string;
  name: SpanName;
  parent: string | null;
  start_ms: number;
  end_ms: number;
  attrs: SpanAttributes;
  error: boolean;
}

interface StoredSpan extends Record<string, SqlStorageValue> {
  key: string;
  name: string;
  parent: string | null;
  start_ms: number;
  end_ms: number | null;
  attrs: string;
  error: number;
}

/** The run's identity as the root span carries it. */
export interface TraceContext {
  run_id: string;
  channel_id: string;
  /** The run's principal (contract section 18): `aee.requested_by`. */
  requested_by: string;
}

export const RUN_SPAN_KEY = "run";
export const toolSpanKey = (toolCallId: string) => `tool:${toolCallId}`;
export const mcpSpanKey = (toolCallId: string) => `mcp:${toolCallId}`;

export const TRACE_SPANS_TABLE: SqlTable = {
  name: "trace_spans",
  ddl: [
    `CREATE TABLE IF NOT EXISTS trace_spans (
      key TEXT PRIMARY KEY, name TEXT NOT NULL, parent TEXT, start_ms INTEGER NOT NULL, end_ms INTEGER,
      attrs TEXT NOT NULL, error INTEGER NOT NULL DEFAULT 0)`,
    `CREATE INDEX IF NOT EXISTS trace_spans_ended ON trace_spans (end_ms) WHERE end_ms IS NOT NULL`,
  ],
};

export class TraceSpans {
  readonly #sql: SqlLike;
  readonly #context: TraceContext;
  readonly traceId: string;

  constructor(sql: SqlLike, context: TraceContext) {
    this.#sql = sql;
    this.#context = context;
    this.traceId = traceIdOf(context.run_id);
  }

  spanId(key: string): string {
    return spanIdOf(this.traceId, key);
  }

  /** Starts span `key` (a second start of the same key changes nothing). */
  start(key: string, name: SpanName, parent: string | null, now: number, attrs: SpanAttributes = {}): void {
    this.#sql.exec(
      `INSERT OR IGNORE INTO trace_spans (key, name, parent, start_ms, attrs) VALUES (?, ?, ?, ?, ?)`,
      key,
      name,
      parent,
      now,
      JSON.stringify({ "aee.run_id": this.#context.run_id, ...attrs }),
    );
  }

  /** Adds attributes to a span still open. */
  annotate(key: string, attrs: SpanAttributes): void {
    const row = this.#open(key);
    if (!row) return;
    this.#sql.exec(`UPDATE trace_spans SET attrs = ? WHERE key = ?`, JSON.stringify({ ...JSON.parse(row.attrs), ...attrs }), key);
  }

  /** Ends span `key` if it is open. Returns whether it ended one (an export is due). */
  end(key: string, now: number, attrs: SpanAttributes = {}, error = false): boolean {
    const row = this.#open(key);
    if (!row) return false;
    this.#sql.exec(
      `UPDATE trace_spans SET end_ms = ?, attrs = ?, error = ? WHERE key = ?`,
      Math.max(now, row.start_ms),
      JSON.stringify({ ...JSON.parse(row.attrs), ...attrs }),
      error ? 1 : 0,
      key,
    );
    return true;
  }

  /**
   * The spans an appended event starts or ends (storage only). Returns
   * whether a span ended, so the object arms its export.
   */
  observeEvent(event: RunEvent, now: number): boolean {
    switch (event.type) {
      case "run_started":
        this.start(RUN_SPAN_KEY, "run", null, now, {
          "aee.channel_id": this.#context.channel_id,
          "aee.requested_by": this.#context.requested_by,
        });
        return false;
      case "tool_started":
        this.start(toolSpanKey(event.tool_call_id), "tool.call", RUN_SPAN_KEY, now, { "aee.tool_call_id": event.tool_call_id });
        return false;
      case "approval_requested":
        this.start(`approval:${event.approval_id}`, "approval.wait", toolSpanKey(event.tool_call_id), now, {
          "aee.tool_call_id": event.tool_call_id,
          "aee.approval_id": event.approval_id,
        });
        return false;
      case "approval_resolved":
        return this.end(`approval:${event.approval_id}`, now, { "aee.outcome": event.decision });
      case "tool_execution":
        this.annotate(toolSpanKey(event.tool_call_id), {
          "aee.outcome": event.execution_status,
          ...(event.mutation_id !== undefined ? { "aee.mutation_id": event.mutation_id } : {}),
        });
        return false;
      case "tool_completed":
        return this.end(toolSpanKey(event.tool_call_id), now);
      case "run_completed":
      case "run_failed": {
        // Whatever is still open ends with the run (a wait cut short, a call that never completed).
        const status = event.type === "run_completed" ? "completed" : "failed";
        for (const open of this.#sql
          .exec<{ key: string }>(`SELECT key FROM trace_spans WHERE end_ms IS NULL AND key <> ?`, RUN_SPAN_KEY)
          .toArray()) {
          this.end(open.key, now);
        }
        this.end(RUN_SPAN_KEY, now, { "aee.status": status }, event.type === "run_failed");
        return true;
      }
      default:
        return false;
    }
  }

  /** Ended spans waiting to be exported, oldest first. */
  ended(limit: number): SpanRow[] {
    return this.#sql
      .exec<StoredSpan>(
        `SELECT key, name, parent, start_ms, end_ms, attrs, error FROM trace_spans WHERE end_ms IS NOT NULL ORDER BY end_ms LIMIT ?`,
        limit,
      )
      .toArray()
      .map((r) => ({
        key: r.key,
        name: r.name as SpanName,
        parent: r.parent,
        start_ms: r.start_ms,
        end_ms: r.end_ms ?? r.start_ms,
        attrs: JSON.parse(r.attrs) as SpanAttributes,
        error: r.error === 1,
      }));
  }

  /** How many ended spans wait for export. */
  get waiting(): number {
    return this.#sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM trace_spans WHERE end_ms IS NOT NULL`).toArray()[0]?.n ?? 0;
  }

  /**
   * Forgets exported spans. Ended spans are deleted; a span key is never
   * started twice, so an exported span cannot come back.
   */
  forget(keys: readonly string[]): void {
    for (const key of keys) this.#sql.exec(`UPDATE trace_spans SET end_ms = NULL, name = 'exported' WHERE key = ?`, key);
  }

  /** Ended spans that ended before `before` (their retry window passed): removed; answers how many. */
  dropEndedBefore(before: number): number {
    const n =
      this.#sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM trace_spans WHERE end_ms IS NOT NULL AND end_ms < ?`, before).toArray()[0]
        ?.n ?? 0;
    if (n > 0) this.#sql.exec(`UPDATE trace_spans SET end_ms = NULL, name = 'dropped' WHERE end_ms IS NOT NULL AND end_ms < ?`, before);
    return n;
  }

  #open(key: string): StoredSpan | undefined {
    return this.#sql
      .exec<StoredSpan>(`SELECT key, name, parent, start_ms, end_ms, attrs, error FROM trace_spans WHERE key = ? AND end_ms IS NULL`, key)
      .toArray()
      .find((r) => r.name !== "exported" && r.name !== "dropped");
  }
}
