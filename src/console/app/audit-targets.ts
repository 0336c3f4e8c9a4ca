// Where an audit entry's target leads in the console (contract section 25:
// the audit page links each entry's target): a run (run.trigger,
// run.cancel), an approval on its run's page (approval.decide), a question's
// run (input.answer), what a token did (token.*), and the API's own JSON for
// a halt or a policy version. Pure; anything else is shown as text.
import { href } from "./router";

export interface TargetLink {
  href: string;
  title: string;
}

const RUN = /^(run_[0-9A-Za-z]+)(?:\/(approvals|inputs)\/(.+))?$/;

export function targetLink(target: string): TargetLink | null {
  const run = RUN.exec(target);
  if (run) {
    const [, runId, kind, id] = run as unknown as [string, string, string | undefined, string | undefined];
    if (kind === "approvals" && id) return { href: href.approval(runId, id), title: `The approval on run ${runId}` };
    return { href: href.run(runId), title: `Run ${runId}` };
  }
  if (target.startsWith("token:")) return { href: href.auditWith({ principal: target }), title: `What ${target} did` };
  const halt = /^(?:halts?[:/])?((?:halt|hlt)_[0-9A-Za-z]+)$/.exec(target);
  if (halt) return { href: `/api/halts/${encodeURIComponent(halt[1]!)}`, title: "The halt (JSON)" };
  const policy = /^policy(?:\/versions)?[:/](\d+)$/.exec(target);
  if (policy) return { href: `/api/policy/versions/${policy[1]}`, title: `Policy version ${policy[1]} (JSON)` };
  return null;
}
