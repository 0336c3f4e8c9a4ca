// The conversation a real model sees, kept in the run's Durable Object
// storage (one row per item) so a run that is evicted mid-turn asks the
// model again with the same history. The scripted provider does not use it.
import type { SqlLike } from "../stream/event-log";
import type { ConversationItem } from "../providers/model-provider";
import type { Done } from "../execution/tool-calls";
import type { SqlTable } from "../stream/sql-schema";
import { logger } from "../operate/logger";

export const CONVERSATION_TABLE: SqlTable = {
  name: "conversation",
  ddl: [`CREATE TABLE IF NOT EXISTS conversation (seq INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL)`],
};

export class Conversation {
  readonly #sql: SqlLike;

  constructor(sql: SqlLike) {
    this.#sql = sql;
  }

  append(item: ConversationItem): void {
    this.#sql.exec(`INSERT INTO conversation (item) VALUES (?)`, JSON.stringify(item));
  }

  items(): ConversationItem[] {
    return this.#sql
      .exec<{ item: string }>(`SELECT item FROM conversation ORDER BY seq`)
      .toArray()
      .map((row) => JSON.parse(row.item) as ConversationItem);
  }
}

/** The results of a finished turn's calls, in the model's order, as the model reads them. */
export function toolResultsItem(calls: readonly Done[]): ConversationItem {
  return {
    role: "tool_results",
    results: [...calls]
      .sort((a, b) => a.index - b.index)
      .map((call) => ({
        tool_call_id: call.tool_call_id,
        content: call.model_result,
        is_error: call.model_is_error,
      })),
  };
}

/**
 * A Slack thread's earlier turns as a follow-up run's model sees them
 * (contract section 14): the people's messages and the app's answers, in
 * order, without the tool calls and results between them (their ids belong
 * to the earlier run). Consecutive answers of one run merge into one turn, so
 * user and assistant turns alternate as the providers expect.
 */
export function threadTurns(items: readonly ConversationItem[]): ConversationItem[] {
  const turns: ConversationItem[] = [];
  for (const item of items) {
    if (item.role === "user") {
      turns.push({ role: "user", text: item.text });
      continue;
    }
    if (item.role !== "assistant" || item.text === undefined || item.text === "") continue;
    const last = turns[turns.length - 1];
    if (last?.role === "assistant")
      turns[turns.length - 1] = { role: "assistant", text: `${last.text ?? ""}\n\n${item.text}`, tool_calls: [] };
    else turns.push({ role: "assistant", text: item.text, tool_calls: [] });
  }
  return turns;
}

/**
 * A Slack thread follow-up's earlier turns, read from the thread's latest run (contract section 14); on
 * a failed read the follow-up still runs, only without them.
 */
export async function earlierThreadTurns(read: () => Promise<ConversationItem[]>, runId: string): Promise<ConversationItem[]> {
  try {
    return await read();
  } catch (err) {
    logger.error("run object: the earlier turns of a thread's run could not be read", {
      previous_run_id: runId,
      error: (err as Error).message,
    });
    return [];
  }
}
