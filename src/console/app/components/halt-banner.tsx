// The halt banner atop every console page (contract section 23): the active
// halts, polled from GET /api/halts?status=active, and for an approver or
// admin a Halt control (POST /api/halts) with a scope and a reason.
import { useState } from "preact/hooks";
import { engine, errorText } from "../api";
import { haltBannerText, mayEngageHalt } from "../halt-banner-text";
import { usePolled } from "../hooks";

export function HaltBanner({ roles }: { roles?: readonly string[] }) {
  const halts = usePolled("active halts", (signal) => engine.listHalts({ status: "active" }, { signal }));
  const text = haltBannerText(halts.data?.halts);
  return (
    <>
      {text !== null ? (
        <p class="halt-banner" role="alert" data-halts={halts.data?.halts.length ?? 0}>
          {text}
        </p>
      ) : null}
      {mayEngageHalt(roles) ? <HaltControl reload={halts.reload} /> : null}
    </>
  );
}

function HaltControl({ reload }: { reload: () => void }) {
  const [scope, setScope] = useState("all");
  const [reason, setReason] = useState("");
  const [said, setSaid] = useState<string>();
  return (
    <details class="halt-control">
      <summary>Halt mutations…</summary>
      <form
        aria-label="Engage a halt"
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            const halt = await engine.engageHalt({ scope: scope.trim(), reason: reason.trim() });
            setSaid(`Halt ${halt.halt_id} engaged.`);
            reload();
          } catch (err) {
            setSaid(errorText(err));
          }
        }}
      >
        <label for="halt-scope">Scope</label> <input id="halt-scope" value={scope} onInput={(e) => setScope(e.currentTarget.value)} />{" "}
        <label for="halt-reason">Reason</label>{" "}
        <input id="halt-reason" required maxLength={500} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />{" "}
        <button type="submit" class="deny">
          Halt
        </button>{" "}
        <span role="status">{said}</span>
      </form>
    </details>
  );
}
