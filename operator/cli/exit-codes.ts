/**
 * @module The operator CLI's exit codes, documented in docs/operating.md.
 * Scripts branch on them, so each has one meaning and they never change.
 */
export const EXIT = {
  /** The command did what was asked. */
  ok: 0,
  /** The store or the owner failed the command (unreachable store, no answer in time, a refused write). */
  failed: 1,
  /** Bad usage or input: unknown command or option, malformed value. Nothing was written. */
  usage: 2,
  /** The run, job or group named does not exist (or was swept). */
  notFound: 3,
  /** The command does not apply to the object's state (cancel an ended run, retry a running one). */
  refused: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
