// The audit entries of a named-token change (contract section 18), written
// in the change's own D1 batch by the request's principal.
import { auditStatement, newAuditId } from "../../audit/audit-log";
import type { Principal } from "../../auth/principal";
import { requestOrigin } from "../request-origin";
import type { TokenAudit } from "./tokens";

export function tokenAudit(db: D1Database, principal: Principal, request: Request): TokenAudit {
  // Contract section 25: where it came from (a console session's request is the console's) and, where known, the client's address.
  const origin = requestOrigin(principal, request);
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
          ...origin,
        },
        { onlyIfPreviousChanged: action === "token.create" },
      ),
  };
}
