// Approve and Withdraw for one proposed or shadow policy version (contract
// section 24), for an admin: POST /api/policy/versions/{v}/approve and
// DELETE /api/policy/versions/{v}. A refusal is shown in words with its code
// (`second_person_required` when the version loosens and this is its author
// or no person, `policy_conflict`, `not_proposed`), never swallowed.
import { useState } from "preact/hooks";
import type { PolicyVersion } from "../../../client/types";
import { engine, errorCode, errorText } from "../api";

/** What a person reads for a refusal of approve or withdraw. */
function refusalText(code: string | undefined, text: string): string {
  switch (code) {
    case "second_person_required":
      return `Refused (second_person_required): ${text} This version loosens the policy, so an admin who is another person than its author must approve it.`;
    case "policy_conflict":
      return `Refused (policy_conflict): ${text}`;
    case undefined:
      return text;
    default:
      return `Refused (${code}): ${text}`;
  }
}

export function PolicyActions({ version, changed }: { version: PolicyVersion; changed: () => void }) {
  const [said, setSaid] = useState<{ text: string; code?: string; ok: boolean }>();
  const [busy, setBusy] = useState(false);
  const act = async (what: "approve" | "withdraw") => {
    setBusy(true);
    try {
      const answer =
        what === "approve" ? await engine.approvePolicyVersion(version.version) : await engine.withdrawPolicyVersion(version.version);
      setSaid({ text: `Version ${answer.version} is ${answer.status} now.`, ok: true });
      changed();
    } catch (err) {
      const code = errorCode(err);
      setSaid({ text: refusalText(code, errorText(err)), ...(code ? { code } : {}), ok: false });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="policy-actions">
      <p class="actions">
        <button type="button" disabled={busy} onClick={() => void act("approve")}>
          Approve version {version.version}
        </button>
        <button type="button" class="deny" disabled={busy} onClick={() => void act("withdraw")}>
          Withdraw
        </button>
      </p>
      {said ? (
        <p class={said.ok ? "meta" : "error"} role={said.ok ? "status" : "alert"} data-refusal={said.code}>
          {said.text}
        </p>
      ) : null}
    </div>
  );
}
