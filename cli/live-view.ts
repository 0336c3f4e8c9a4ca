// The live view of one run (`trigger --watch`, `watch`): one line per event
// (heartbeats only move the spinner unless --heartbeats), the spinner while
// the run waits, and, when a person is at the terminal, "approve? [y/N]" at
// each approval_requested (typed confirmation for `confirm` tools) and the
// answer to each human__ask. Under --json every event, heartbeats included,
// is printed as it came, one JSON object per line.
import { ApiError, type EngineClient, type EngineEvent, type InputAnswer } from "approved-execution-engine/client";
import { commandName } from "./environment.js";
import { eventLine } from "./render.js";
import { type Output, type Prompter, spinner } from "./terminal.js";

export interface LiveViewOptions {
  out: Output;
  /** Ask the person at the terminal; undefined when nobody can be asked. */
  prompter: Prompter | undefined;
  /** No prompter although prompts were wanted (stdin or stdout not a terminal): print how to decide elsewhere. */
  hintWhenUnasked?: boolean;
  showHeartbeats: boolean;
  /**
   * `watch` of a run already under way: its summary's last sequence when the
   * watch began and what was pending then. A replayed approval or question
   * (at or before that sequence) that was no longer pending is history: it
   * is shown, but neither asked nor hinted at again.
   */
  replayed?: { through: number; pending: ReadonlySet<string> };
}

type Terminal = Extract<EngineEvent, { type: "run_completed" | "run_failed" }>;
type ApprovalRequested = Extract<EngineEvent, { type: "approval_requested" }>;
type InputRequested = Extract<EngineEvent, { type: "human_input_requested" }>;

/** Shows the run's events until its terminal event; returns it (undefined if the stream ended on 204 without one). */
export async function liveView(
  client: EngineClient,
  runId: string,
  events: AsyncIterable<EngineEvent>,
  options: LiveViewOptions,
): Promise<Terminal | undefined> {
  const { out } = options;
  const spin = spinner(out, `waiting for ${runId}`);
  let terminal: Terminal | undefined;
  try {
    for await (const event of events) {
      spin.status(waitingText(event));
      if (out.json) out.object(event);
      else if (event.type !== "heartbeat" || options.showHeartbeats) spin.print(eventLine(event));
      if (event.type === "run_completed" || event.type === "run_failed") terminal = event;
      if (decidedBeforeWatch(event, options.replayed)) continue;
      if (!options.prompter) {
        if (options.hintWhenUnasked) hintElsewhere(out, event);
        continue;
      }
      if (event.type === "approval_requested") {
        spin.pause();
        await askApproval(client, event, options.prompter, options);
        spin.resume();
      } else if (event.type === "human_input_requested") {
        spin.pause();
        await askAnswer(client, event, options.prompter, options);
        spin.resume();
      }
    }
  } finally {
    spin.stop();
  }
  return terminal;
}

/** A replayed approval or question that was no longer pending when the watch began. */
function decidedBeforeWatch(event: EngineEvent, replayed: LiveViewOptions["replayed"]): boolean {
  if (replayed === undefined || event.sequence > replayed.through) return false;
  if (event.type === "approval_requested") return !replayed.pending.has(event.approval_id);
  if (event.type === "human_input_requested") return !replayed.pending.has(event.input_id ?? event.tool_call_id);
  return false;
}

/** Not at a terminal: the commands that decide what this run waits for, on stderr (stdout keeps the event lines). */
function hintElsewhere(out: Output, event: EngineEvent): void {
  const cli = commandName();
  if (event.type === "approval_requested") {
    out.note(
      `cannot ask here (stdin or stdout is not a terminal): decide from another shell with\n` +
        `  ${cli} approve ${event.run_id} ${event.approval_id}${event.level === "confirm" ? ` --confirm ${event.tool_name}` : ""}\n` +
        `  ${cli} deny ${event.run_id} ${event.approval_id} --reason "..."\n` +
        `waiting for the decision until ${event.expires_at} (--no-prompt silences this).`,
    );
  } else if (event.type === "human_input_requested" && event.input_id !== undefined) {
    out.note(
      `cannot ask here (stdin or stdout is not a terminal): answer from another shell with\n` +
        `  ${cli} answer ${event.run_id} ${event.input_id} --accept '<json content>'   (or --decline, --cancel)\n` +
        `waiting for the answer until ${event.expires_at} (--no-prompt silences this).`,
    );
  } else if (event.type === "human_input_requested") {
    out.note(
      `cannot ask here (stdin or stdout is not a terminal): answer from another shell with\n` +
        `  ${cli} answer ${event.run_id} ${event.tool_call_id} "<answer>"\n` +
        `waiting for the answer until ${event.expires_at} (--no-prompt silences this).`,
    );
  }
}

function waitingText(event: EngineEvent): string {
  switch (event.type) {
    case "approval_requested":
      return `waiting for a decision on ${event.tool_name} (${event.approval_id})`;
    case "human_input_requested":
      return `waiting for an answer to ${event.tool_call_id}`;
    case "tool_execution_started":
      return `running ${event.tool_name}`;
    default:
      return `waiting for ${event.run_id} (last event #${event.sequence})`;
  }
}

/** "approve? [y/N]"; yes on a `confirm` tool asks for the tool name too, again while it is mistyped. */
async function askApproval(client: EngineClient, event: ApprovalRequested, prompter: Prompter, options: LiveViewOptions): Promise<void> {
  const { out } = options;
  const answer = await prompter.ask("approve? [y/N] ");
  if (answer === undefined) return out.note(`no answer (input ended); ${event.approval_id} stays pending`);
  const approve = /^y(es)?$/i.test(answer.trim());
  for (;;) {
    let confirmation: string | undefined;
    if (approve && event.level === "confirm") {
      confirmation = await prompter.ask(`type the tool name (${event.tool_name}) to confirm: `);
      if (confirmation === undefined) return out.note(`no confirmation (input ended); ${event.approval_id} stays pending`);
      confirmation = confirmation.trim();
    }
    try {
      const result = await client.decideApproval(event.run_id, event.approval_id, {
        decision: approve ? "approve" : "deny",
        ...(confirmation === undefined ? {} : { confirmation }),
      });
      out.line(
        `${result.decision} ${event.approval_id}${result.status === "pending" ? ` votes=${result.votes}/${result.required} (pending)` : ""}`,
      );
      return;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      out.note(`refused: ${err.code} (${err.status}): ${err.body.message ?? ""}`);
      if (err.code !== "confirmation_mismatch") return;
    }
  }
}

/**
 * The answer to a human__ask; an empty line leaves the question for someone else. An MCP
 * tool's question (contract section 21) takes its form's content as a JSON object, or
 * `decline` / `cancel`.
 */
async function askAnswer(client: EngineClient, event: InputRequested, prompter: Prompter, options: LiveViewOptions): Promise<void> {
  const mcp = event.input_id !== undefined;
  const text = await prompter.ask(
    mcp
      ? `answer as JSON content for ${JSON.stringify(event.requested_schema ?? {})}, or decline / cancel (empty to leave it open): `
      : `answer (empty to leave it open): `,
  );
  if (text === undefined || text.trim() === "") return;
  try {
    if (mcp) {
      const word = text.trim();
      let answer: InputAnswer;
      if (word === "decline" || word === "cancel") answer = { action: word };
      else {
        let content: unknown;
        try {
          content = JSON.parse(word);
        } catch {
          content = undefined;
        }
        if (typeof content !== "object" || content === null || Array.isArray(content)) {
          return options.out.note(`not a JSON object; ${event.input_id} stays open`);
        }
        answer = { action: "accept", content: content as Record<string, unknown> };
      }
      const result = await client.answerInput(event.run_id, event.input_id ?? "", answer);
      options.out.line("action" in result ? `${result.action} ${result.input_id}` : `answered ${event.input_id}`);
      return;
    }
    await client.answerInput(event.run_id, event.tool_call_id, { answer: text });
    options.out.line(`answered ${event.tool_call_id}`);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    options.out.note(`refused: ${err.code} (${err.status}): ${err.body.message ?? ""}`);
  }
}
