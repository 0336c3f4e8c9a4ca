// The CLI's exit codes (contract section 15) and the one error type that
// means "the command line was wrong". Everything else a command throws is
// either the service refusing (an ApiError) or the service being unreachable.

/** The command did what was asked. */
export const EXIT_OK = 0;
/** The service refused (an error code is printed), could not be reached, or a watched run failed. */
export const EXIT_REFUSED = 1;
/** Bad usage: unknown command or option, a missing or malformed argument, missing settings. */
export const EXIT_USAGE = 2;

/** `audit verify` (contract section 25): all checks passed, but entries after the last checkpoint are unsigned, or no key was given. */
export const EXIT_UNSIGNED = 3;

export type ExitCode = typeof EXIT_OK | typeof EXIT_REFUSED | typeof EXIT_USAGE | typeof EXIT_UNSIGNED;

/** The user asked for something the CLI cannot send; exits with EXIT_USAGE. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
