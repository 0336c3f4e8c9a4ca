// A run's id as a link to its page: monospace on one line, cut with an
// ellipsis where it does not fit, the whole id in its title and its address.
import { href } from "../router";

export function RunLink({ runId }: { runId: string }) {
  return (
    <a class="run-id" href={href.run(runId)} title={runId}>
      {runId}
    </a>
  );
}
