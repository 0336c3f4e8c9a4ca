// Which Slack events start a run, and with what input (contract section 14).
// Pure: given the Events API envelope's event, the app's own user id and the
// model provider, decide "start" (with the run's start input, minus its new
// run id) or "ignore" (with the reason, for logs and tests).
import { z } from "zod";
import type { StartRunInput } from "../agent/run-record";
import { isKnownToolNameShape } from "../execution/tool-policy";
import { type ScriptTurn, scriptTurnSchema } from "../http/trigger-request";

/** The trigger's own bound on a message (contract section 3). */
const MESSAGE_MAX_CHARS = 32_768;

export type Intake = { kind: "start"; input: Omit<StartRunInput, "run_id"> } | { kind: "ignore"; reason: string };

/** The fields of app_mention / message events this app reads; Slack sends many more. */
const slackMessageEventSchema = z
  .object({
    type: z.enum(["app_mention", "message"]),
    subtype: z.string().optional(),
    bot_id: z.string().optional(),
    user: z.string().optional(),
    channel: z.string().optional(),
    channel_type: z.string().optional(),
    text: z.string().optional(),
    ts: z.string().optional(),
    thread_ts: z.string().optional(),
  })
  .loose();

export interface IntakeContext {
  event_id: string;
  /** The app's own user id (from the envelope's authorizations, else SLACK_BOT_USER_ID); undefined if neither. */
  bot_user_id: string | undefined;
  scripted: boolean;
}

/** Direct-message channel ids start with D. */
const isDirectMessageChannel = (channel: string) => channel.startsWith("D");

export function intakeEvent(raw: unknown, ctx: IntakeContext): Intake {
  const parsed = slackMessageEventSchema.safeParse(raw);
  if (!parsed.success) return { kind: "ignore", reason: "not a message event this app reads" };
  const event = parsed.data;
  if (event.subtype !== undefined)
    return { kind: "ignore", reason: `message subtype ${event.subtype} (edits, deletions, bot messages start nothing)` };
  if (event.bot_id !== undefined) return { kind: "ignore", reason: "a bot's message" };
  if (event.user === undefined || event.channel === undefined || event.ts === undefined)
    return { kind: "ignore", reason: "no user, channel or ts" };
  if (ctx.bot_user_id !== undefined && event.user === ctx.bot_user_id) return { kind: "ignore", reason: "the app's own message" };
  if (event.type === "app_mention" && isDirectMessageChannel(event.channel)) {
    return { kind: "ignore", reason: "app_mention in a direct message (its message event starts the run)" };
  }
  if (event.type === "message" && event.channel_type !== "im") return { kind: "ignore", reason: "a channel message without a mention" };

  const message = stripOwnMention(event.text ?? "", ctx.bot_user_id).slice(0, MESSAGE_MAX_CHARS);
  if (message === "") return { kind: "ignore", reason: "an empty message" };
  return {
    kind: "start",
    input: {
      channel_id: event.channel,
      user_id: event.user,
      delivery_id: ctx.event_id,
      message,
      max_tool_calls: null,
      script: ctx.scripted ? scriptFromText(message) : null,
      source: "slack",
      slack: { thread_ts: event.thread_ts ?? event.ts, message_ts: event.ts },
    },
  };
}

/** Removes `<@BOT>` and `<@BOT|name>` mentions of the app itself; other people's mentions stay. */
export function stripOwnMention(text: string, botUserId: string | undefined): string {
  if (botUserId === undefined) return text.trim();
  const escaped = botUserId.replace(/[^A-Z0-9]/g, "");
  return text
    .replace(new RegExp(`<@${escaped}(?:\\|[^>]*)?>`, "g"), " ")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}

const fencedScriptSchema = z.object({ script: z.array(scriptTurnSchema).min(1).max(10_000) }).loose();

/**
 * With the scripted provider, a message holding a fenced ```json block with a
 * "script" array plays that script (the offline demo and tests). Anything
 * else, including a script naming a tool this engine cannot call, is echoed.
 */
export function scriptFromText(text: string): ScriptTurn[] | null {
  const fence = /```json\s*\n?([\s\S]*?)```/.exec(text);
  if (!fence) return null;
  let json: unknown;
  try {
    json = JSON.parse(unescapeSlackText(fence[1] ?? ""));
  } catch {
    return null;
  }
  const parsed = fencedScriptSchema.safeParse(json);
  if (!parsed.success) return null;
  const script = parsed.data.script;
  const allKnown = script.every((turn) => (turn.tool_calls ?? []).every((call) => isKnownToolNameShape(call.tool_name)));
  return allKnown ? script : null;
}

/** Slack escapes &, < and > in message text. */
function unescapeSlackText(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}
