// The words and the colour of every state the console shows (contract
// sections 4, 8, 16): a call card's, from its stage and for a mutation its
// durable outcome, and a run's, from its status, what it waits for and its
// mutations' outcomes. Each tone has its own colour in console.css; success
// is only what the contract calls success (result without error, and for a
// mutation the durable outcome `completed`), so an `outcome_unknown` call is
// a warning and never green, and a cancelled run is grey, never red.
import type { MutationOutcome, NotExecutedReason } from "../../client/types";
import type { CallCard, RunViewStatus } from "./call-cards";

type Tone =
  /** Nothing decided yet. */
  | "neutral"
  /** Waits for a person. */
  | "waiting"
  /** Decided, on its way. */
  | "progress"
  | "ok"
  /** Needs a person's attention: nobody knows whether it happened. */
  | "warn"
  | "bad"
  /** Stopped on purpose (denied, cancelled, expired): not a failure. */
  | "stopped";

export interface Verdict {
  tone: Tone;
  words: string;
}

/** Reasons for not executing that a person chose or let happen, rather than a refusal of the system. */
const STOPPED_REASONS: readonly NotExecutedReason[] = ["denied", "expired", "cancelled"];

const words = (reason: string) => reason.replace(/_/g, " ");

/** Reasons whose words say more than their name (contract section 23: the change is named). */
const REASON_WORDS: Partial<Record<NotExecutedReason, string>> = {
  tool_changed: "the tool's schema changed after it was approved",
};

/** A mutation's durable outcome in words (contract section 8). */
export function outcomeVerdict(row: MutationOutcome): Verdict {
  const by = row.reconciliation ? ` (reconciled by ${row.reconciliation.reconciled_by})` : "";
  switch (row.state) {
    case "completed":
      return { tone: "ok", words: `completed${by}` };
    case "not_executed":
      return { tone: "stopped", words: `did not happen${by}` };
    case "outcome_unknown":
      return { tone: "warn", words: "outcome unknown" };
    case "unresolved":
      return { tone: "progress", words: "settling" };
  }
}

/** A call card: its stage, and once it executed, whether it worked (for a mutation: its durable outcome). */
export function cardVerdict(card: CallCard, outcome: MutationOutcome | undefined): Verdict {
  switch (card.stage) {
    case "announced":
      return { tone: "neutral", words: "announced" };
    case "waiting_for_approval":
      return { tone: "waiting", words: "waiting for approval" };
    case "waiting_for_answer":
      return { tone: "waiting", words: "waiting for an answer" };
    case "approved":
      return { tone: "progress", words: "approved" };
    case "answered":
      return { tone: "progress", words: "answered" };
    case "not_executed": {
      const reason = card.reason ?? "not_executed";
      const stopped = card.reason !== undefined && STOPPED_REASONS.includes(card.reason);
      const said = card.reason === undefined ? undefined : REASON_WORDS[card.reason];
      return { tone: stopped ? "stopped" : "bad", words: `not executed: ${said ?? words(reason)}` };
    }
    case "executed": {
      if (card.mutation_id !== undefined) {
        if (outcome) return outcomeVerdict(outcome);
        // Until the row is read: the event alone is not success (contract section 4).
        return card.error ? { tone: "warn", words: `executed with ${words(card.error.code)}` } : { tone: "progress", words: "executed" };
      }
      if (card.error) return { tone: "bad", words: `failed: ${words(card.error.code)}` };
      if (card.result?.is_error) return { tone: "bad", words: "the tool answered with an error" };
      return { tone: "ok", words: "executed" };
    }
  }
}

/** What a run waits for, from its cards or from the listings of what waits. */
interface RunWaits {
  approval: boolean;
  answer: boolean;
}

/** A run: its status, what it waits for while running, and whether a mutation's outcome is unknown once it ended. */
export function runVerdict(status: RunViewStatus, waits: RunWaits, outcomeUnknown: boolean): Verdict {
  switch (status) {
    case "running":
      if (waits.approval) return { tone: "waiting", words: "waiting for approval" };
      if (waits.answer) return { tone: "waiting", words: "waiting for an answer" };
      return { tone: outcomeUnknown ? "warn" : "progress", words: outcomeUnknown ? "running, outcome unknown" : "running" };
    case "completed":
      return outcomeUnknown ? { tone: "warn", words: "completed, outcome unknown" } : { tone: "ok", words: "completed" };
    case "cancelled":
      return outcomeUnknown ? { tone: "warn", words: "cancelled, outcome unknown" } : { tone: "stopped", words: "cancelled" };
    case "failed":
      return outcomeUnknown ? { tone: "warn", words: "failed, outcome unknown" } : { tone: "bad", words: "failed" };
  }
}
