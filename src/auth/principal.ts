// Who makes a request (contract section 18), learned from its credential only.
// `credential` says which credential proved it: the console cookie and an
// Access user's assertion are sent by the browser by itself, so state-changing
// requests on them must pass the Origin rule (src/auth/origin-rule.ts).
import type { Role } from "./roles";

export type Credential =
  | { kind: "root_token" }
  | { kind: "named_token"; name: string }
  | { kind: "console_session"; session_id: string }
  | { kind: "access_user" }
  | { kind: "access_service" };

export interface Principal {
  /** `token:root`, `token:<name>`, `access:<email>`, `access-service:<common_name>`. */
  id: string;
  roles: readonly Role[];
  credential: Credential;
  /** For a named token: the person it acts for (an `access:` or `slack:` principal id). */
  owner?: string;
}

export const ROOT_PRINCIPAL_ID = "token:root";

/** The credentials a browser attaches by itself. */
export function isBrowserHeld(credential: Credential): boolean {
  return credential.kind === "console_session" || credential.kind === "access_user";
}
