// Who asked and what for (contract section 16): the run's requester and its
// request text, as the run's timeline opens with it and as every approval and
// question card in the inboxes shows it, so a person deciding from the inbox
// sees what the run page shows.

/** The run's requester: the principal that triggered it, and the person an adapter triggered it for. */
export interface Asker {
  by?: string | undefined;
  on_behalf_of?: string | undefined;
}

/** "ada asked", "svc asked on behalf of ada", or "The request" when nobody is known. */
function askedByWords(asker: Asker): string {
  if (!asker.by) return "The request";
  return asker.on_behalf_of ? `${asker.by} asked on behalf of ${asker.on_behalf_of}` : `${asker.by} asked`;
}

/** The two lines: who asked, and the request in their own words (redacted by the engine). */
export function AskedBy({ asker, request }: { asker: Asker; request: string | undefined }) {
  return (
    <>
      <p class="who-said" data-asked-by={asker.by}>
        {askedByWords(asker)}
      </p>
      <p class="said">{request ?? "(this run's request was not kept: it started before the engine kept requests)"}</p>
    </>
  );
}
