// The audit entries of a named-token change (contract section 18), written
// in the change's own D1 batch by the request's principal.
import { auditStatement, newAuditId } from "../../audit/audit-log";
import type { Principal } from "../../auth/principal";
import type { TokenAudit } from "./tokens";

export function tokenAudit(db: D1Database, principal: Principal): TokenAudit {
  return {
    entry: (action, target, details) =>
      auditStatement(
        db,
        {
          id: newAuditId(),
          at: new Date().toISOString(),
          principal: principal.id,
          action,
          target,
          result: "ok",
          ...(details ? { details } : {}),
        },
        { onlyIfPreviousChanged: action === "token.create" },
      ),
  };
}
