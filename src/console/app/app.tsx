// The console's shell (contract section 16): the header with the pages and
// the counts of what waits, who is signed in and sign-out, the halt banner
// (contract section 23), and the page the URL's hash names. Everything shown comes from the API as the engine sent it
// (arguments already redacted); Preact escapes all text.
import { useEffect, useState } from "preact/hooks";
import { session } from "./api";
import { HaltBanner } from "./components/halt-banner";
import { useNow } from "./hooks";
import { ApprovalsPage } from "./pages/approvals-page";
import { AuditPage, type Viewer } from "./pages/audit-page";
import { OutcomesPage } from "./pages/outcomes-page";
import { PolicyPage } from "./pages/policy-page";
import { PoolPage } from "./pages/pool-page";
import { QuestionsPage } from "./pages/questions-page";
import { RunPage } from "./pages/run-page";
import { RunsPage } from "./pages/runs-page";
import { UnknownPage } from "./pages/unknown-page";
import { WaitingPage } from "./pages/waiting-page";
import { href, parseRoute, type Route } from "./router";
import { countText, unexpired, useWaiting, type Waiting } from "./waiting";

type NavPage = Exclude<Route["page"], "run" | "unknown">;

const NAV: {
  href: string;
  label: string;
  page: NavPage;
  count?: (w: Waiting, now: number) => string;
  /** Shown only to a viewer holding this role. */
  role?: string;
}[] = [
  { href: href.waiting, label: "Waiting", page: "waiting" },
  { href: href.runs, label: "Runs", page: "runs" },
  {
    href: href.approvals,
    label: "Approvals",
    page: "approvals",
    count: (w, now) => countText(unexpired(w.approvals, now), w.more.approvals),
  },
  { href: href.questions, label: "Questions", page: "questions", count: (w, now) => countText(unexpired(w.inputs, now), w.more.inputs) },
  { href: href.outcomes, label: "Outcomes", page: "outcomes", count: (w) => countText(w.unknown, w.more.unknown) },
  { href: href.pool, label: "Storage pool", page: "pool" },
  { href: href.policy, label: "Policy", page: "policy" },
  { href: href.audit, label: "Audit log", page: "audit", role: "admin" },
];

function Page({ route, now, waiting, who }: { route: Route; now: number; waiting: Waiting; who?: Viewer }) {
  switch (route.page) {
    case "waiting":
      return <WaitingPage waiting={waiting} now={now} who={who?.name} />;
    case "runs":
      return <RunsPage waiting={waiting} filters={route.filters} now={now} />;
    case "run":
      return <RunPage key={route.runId} runId={route.runId} focusApproval={route.approvalId} now={now} />;
    case "approvals":
      return (
        <ApprovalsPage
          approvals={waiting.approvals}
          error={waiting.errors.approvals}
          now={now}
          reload={waiting.reload.approvals}
          viewer={who?.name}
        />
      );
    case "questions":
      return <QuestionsPage inputs={waiting.inputs} error={waiting.errors.inputs} now={now} reload={waiting.reload.inputs} />;
    case "outcomes":
      return <OutcomesPage mutations={waiting.unknown} error={waiting.errors.unknown} reload={waiting.reload.unknown} viewer={who} />;
    case "pool":
      return <PoolPage />;
    case "audit":
      return <AuditPage filters={route.filters} viewer={who} />;
    case "policy":
      return <PolicyPage viewer={who} />;
    case "unknown":
      return <UnknownPage fragment={route.fragment} />;
  }
}

export function App() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  const [who, setWho] = useState<Viewer>();
  const now = useNow();
  const waiting = useWaiting();
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", onHash);
    session.who().then(setWho, () => undefined);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  const active = route.page === "run" ? "runs" : route.page;
  return (
    <>
      <header>
        <h1>
          <a href={href.waiting}>Approved execution</a>
        </h1>
        <nav aria-label="Console pages">
          {NAV.filter((n) => n.role === undefined || who?.roles.includes(n.role)).map((n) => {
            const count = n.count?.(waiting, now) ?? "";
            return (
              <a key={n.page} href={n.href} aria-current={n.page === active ? "page" : undefined} data-page={n.page}>
                {n.label}
                {count !== "" ? (
                  <span class={count === "0" ? "count" : "count waiting"} data-count={count}>
                    <span class="visually-hidden"> waiting: </span>
                    {count}
                  </span>
                ) : null}
              </a>
            );
          })}
        </nav>
        <p class="who">
          {who ? <span>signed in as {who.name}</span> : null}{" "}
          <button type="button" onClick={() => void session.signOut(who?.access)}>
            Sign out
          </button>
        </p>
      </header>
      <HaltBanner roles={who?.roles} />
      <main>
        <Page route={route} now={now} waiting={waiting} who={who} />
      </main>
    </>
  );
}
