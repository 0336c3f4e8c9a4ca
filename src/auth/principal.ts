// Who makes a request (contract section 18), learned from its credential only.
// `credential` says which credential proved it: the console cookie, an
// Access user's assertion and any assertion in Access's CF_Authorization
// cookie are sent by the browser by itself, so state-changing requests on them
// must pass the Origin rule (src/auth/origin-rule.ts).
import type { Role } from "./roles";

/** Where an Access assertion came from: a cookie is sent by the browser by itself (the Origin rule applies). */
export type AssertionSource = "header" | "cookie";

export type Credential =
  | { kind: "root_token" }
  | { kind: "named_token"; name: string }
  | { kind: "console_session"; session_id: string }
  | { kind: "access_user"; via: AssertionSource }
  | { kind: "access_service"; via: AssertionSource };

export interface Principal {
  /** `token:root`, `token:<name>`, `access:<email>`, `access-service:<common_name>`. */
  id: string;
  roles: readonly Role[];
  credential: Credential;
  /** For a named token: the person it was made for (an `access:` or `slack:` principal id); proves nothing unless owned_by_creator. */
  owner?: string;
  /** For a named token: its `access:` owner created it for themselves, so it is that person (contract section 19). */
  owned_by_creator?: boolean;
}

export const ROOT_PRINCIPAL_ID = "token:root";

/** The credentials a browser attaches by itself. */
export function isBrowserHeld(credential: Credential): boolean {
  switch (credential.kind) {
    case "console_session":
    case "access_user":
      return true;
    case "access_service":
      // A service sends the header itself; the same assertion in a cookie rides along with any request.
      return credential.via === "cookie";
    default:
      return false;
  }
}
