// The words TOOL_POLICY and APPROVER_GROUPS are written in (contract section
// 19): a principal pattern's kinds, a `group:<name>` reference, the `"*"`
// entry's key and the bound on approvals_required. The configuration
// validates with them as it loads; the policy (src/policy/) reads them when
// it decides. Plain values, no logic.

/** A pattern's principal kinds; anything else is a typo that must fail closed (bad_config). */
export const APPROVER_PATTERN_REGEX = /^(?:token|access|access-service|slack):\S+$/;
export const GROUP_REFERENCE_REGEX = /^group:([A-Za-z0-9][A-Za-z0-9_-]{0,62})$/;

/** The most approvals a tool may require (contract section 19). */
export const MAX_APPROVALS_REQUIRED = 5;
/** The key of TOOL_POLICY whose entry gives every tool's defaults. */
export const POLICY_DEFAULTS_KEY = "*";
