// Where a request came from, as its audit entries record it (contract
// section 25): `via` is `console` for a console session's request, else
// `api`, and `client_ip` the client's address (CF-Connecting-IP) where known.
import type { Principal } from "../auth/principal";
import type { ActionOrigin } from "../wire/run-protocol";

export function requestOrigin(principal: Principal, request: Request): ActionOrigin & { via: "api" | "console" } {
  const clientIp = request.headers.get("cf-connecting-ip");
  return {
    via: principal.credential.kind === "console_session" ? "console" : "api",
    ...(clientIp ? { client_ip: clientIp } : {}),
  };
}
