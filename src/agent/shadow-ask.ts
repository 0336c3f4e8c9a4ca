// The `ask` check's verdict words (contract section 24): `not_in_budget`,
// `halted`, `rate_limited`, else the level asked (`approve`, `confirm`) or
// `automatic`, in the order the call's announcement decides them
// (src/execution/tool-calls.ts announce). One function judges the active
// version's classification and the shadow's, so they are compared word for
// word; the halt and the limit found before asking are what actually
// happened (the shadow keeps no tally of its own).
import type { ToolClass } from "../execution/tool-policy";

export function askVerdict(
  tool: Pick<ToolClass, "kind" | "mutating" | "level">,
  toolName: string,
  budget: Readonly<Record<string, number>>,
  found: { halted: boolean; rateLimited: boolean },
): string | null {
  if (tool.kind === "human_ask") return null;
  if (tool.mutating && (budget[toolName] ?? 0) <= 0) return "not_in_budget";
  if (tool.mutating && found.halted) return "halted";
  if (tool.mutating && found.rateLimited) return "rate_limited";
  return tool.level ?? "automatic";
}
