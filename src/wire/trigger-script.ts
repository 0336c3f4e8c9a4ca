// The trigger's `script` (contract section 3): the turns a scripted run's
// "model" plays, each with its text, its tool calls and how long it thinks.
// On the ground floor: the trigger's body (src/http/trigger-request.ts), a
// Slack message's fenced script (src/slack/event-intake.ts) and the scripted
// player (src/providers/scripted.ts) read the one schema.
import { z } from "zod";
import { MAX_IDENTIFIER_CHARS } from "../ids";

/** Upper bound on one scripted "model" delay: a test run can take seconds, not hours. */
const MAX_SCRIPT_DELAY_MS = 600_000;

const scriptedToolCallSchema = z
  .object({
    tool_name: z.string().min(1).max(MAX_IDENTIFIER_CHARS),
    arguments: z.record(z.string(), z.unknown()).default({}),
    tool_call_id: z.string().min(1).max(MAX_IDENTIFIER_CHARS).optional(),
  })
  .strict();

export const scriptTurnSchema = z
  .object({
    text: z.string().max(32_768).optional(),
    tool_calls: z.array(scriptedToolCallSchema).max(64).optional(),
    delay_ms: z.number().int().min(0).max(MAX_SCRIPT_DELAY_MS).optional(),
  })
  .strict();

export type ScriptTurn = z.output<typeof scriptTurnSchema>;
