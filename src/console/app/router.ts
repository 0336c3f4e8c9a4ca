// The console's hash router: the page a URL fragment names, and the fragment
// of each page. Pure (no DOM), so it is unit-tested. Any fragment parses: a
// malformed percent-escape (`#/runs/%E0%A4%A`) is kept as typed instead of
// throwing URIError (contract section 20: the console renders for any
// fragment), and an unknown page is its own route, shown as such.

export type Route =
  /** The landing page: what waits for a person (approvals, questions, outcomes to reconcile). */
  | { page: "waiting" }
  | { page: "runs" }
  | { page: "run"; runId: string }
  | { page: "approvals" }
  | { page: "questions" }
  | { page: "outcomes" }
  | { page: "pool" }
  | { page: "unknown"; fragment: string };

/** decodeURIComponent that never throws: a malformed escape stays as it was typed. */
export function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, "");
  const [first = "", second, ...rest] = path.split("/");
  const simple = rest.length === 0 && second === undefined;
  switch (first) {
    case "":
      return { page: "waiting" };
    case "runs":
      if (simple || second === "") return { page: "runs" };
      if (rest.length === 0 && second !== undefined) return { page: "run", runId: safeDecode(second) };
      break;
    case "approvals":
    case "questions":
    case "outcomes":
    case "pool":
      if (simple) return { page: first };
      break;
  }
  return { page: "unknown", fragment: safeDecode(path) };
}

export const href = {
  waiting: "#/",
  runs: "#/runs",
  run: (runId: string) => `#/runs/${encodeURIComponent(runId)}`,
  approvals: "#/approvals",
  questions: "#/questions",
  outcomes: "#/outcomes",
  pool: "#/pool",
} as const;
