// A fragment that names no page: said so, with the way back.
import { href } from "../router";

export function UnknownPage({ fragment }: { fragment: string }) {
  return (
    <section aria-labelledby="unknown-title">
      <h2 id="unknown-title">No such page</h2>
      <p>
        The console has no page at <code>#{fragment}</code>. See <a href={href.waiting}>what waits</a> or <a href={href.runs}>the runs</a>.
      </p>
    </section>
  );
}
