// What waits on a person across runs, polled once for the whole console: the
// pending approvals and questions and the outcome_unknown rows (contract
// section 15). The navigation counts them, the landing page lists them, and
// the runs list derives each run's "waiting for approval / an answer" from them.
// The questions are human__ask's and MCP servers' mid-call (contract section
// 21: those carry input_id and requested_schema), from the one inputs listing.
import type { ApprovalListItem, InputListItem, MutationOutcome } from "../../client/types";
import { engine } from "./api";
import { usePolled } from "./hooks";

/** Items read per listing: the counts say "200+" beyond it. */
const WAITING_LIMIT = 200;

/** A question waiting in the inbox; an MCP server's carries its id and its form's schema. */
export type WaitingInput = InputListItem;

export interface Waiting {
  approvals?: ApprovalListItem[];
  inputs?: WaitingInput[];
  unknown?: MutationOutcome[];
  /** Whether a listing had more than WAITING_LIMIT items. */
  more: { approvals: boolean; inputs: boolean; unknown: boolean };
  errors: { approvals?: string; inputs?: string; unknown?: string };
  reload: { approvals: () => void; inputs: () => void; unknown: () => void };
}

export function useWaiting(): Waiting {
  const approvals = usePolled("approvals", (signal) => engine.listApprovals({ status: "pending", limit: WAITING_LIMIT }, { signal }));
  const inputs = usePolled("inputs", (signal) => engine.listInputs({ status: "pending", limit: WAITING_LIMIT }, { signal }));
  const unknown = usePolled("unknown", (signal) => engine.listMutations({ state: "outcome_unknown", limit: WAITING_LIMIT }, { signal }));
  return {
    approvals: approvals.data?.approvals,
    inputs: inputs.data?.inputs,
    unknown: unknown.data?.mutations,
    more: {
      approvals: (approvals.data?.next_cursor ?? null) !== null,
      inputs: (inputs.data?.next_cursor ?? null) !== null,
      unknown: (unknown.data?.next_cursor ?? null) !== null,
    },
    errors: { approvals: approvals.error, inputs: inputs.error, unknown: unknown.error },
    reload: {
      approvals: approvals.reload,
      inputs: inputs.reload,
      unknown: unknown.reload,
    },
  };
}

/** "3", "200+", or "" while unknown. */
export function countText(items: unknown[] | undefined, more: boolean): string {
  if (items === undefined) return "";
  return more ? `${items.length}+` : String(items.length);
}

/** The items whose decision window is still open (the inboxes drop the others too). */
export function unexpired<T extends { expires_at: string }>(items: T[] | undefined, now: number): T[] | undefined {
  return items?.filter((i) => Date.parse(i.expires_at) > now);
}
