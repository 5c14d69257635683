/**
 * @module The tokens of the terminations no worker performs (an external
 * cancel of a waiting step, dead-step reconciliation, a debounce replacing
 * a run), and telling such a termination from a worker's.
 *
 * A worker's token is its delivery (`<job id>:<attempt>`), and a worker
 * records an outcome with it. These ends record none of their own: the
 * outcome of such a run is its termination (see `inline-outcome`). The
 * prefixes have been the same in every version, so a terminal record
 * written before outcomes were built from them is recognised too.
 *
 * Pure: no IO.
 */
import type { RunErrorKind } from "./run-types.js";

/** The kinds of end no worker performs, each with its token's prefix. */
const PREFIX_OF = { cancelled: "cancel:", dead_lettered: "dead:", superseded: "superseded:" } as const;

/** The kinds of end no worker performs. */
export type EndWithoutWorker = keyof typeof PREFIX_OF;

/** The token of the end `kind` of the run whose current step is the job `jobId`. */
export function tokenWithoutWorker(kind: EndWithoutWorker, jobId: string): string {
  return `${PREFIX_OF[kind]}${jobId}`;
}

/**
 * Whether the termination with `token` and `errorKind` was performed
 * without a worker. Both must agree: a worker also ends runs as
 * `cancelled` (a cancel of a running step), with its delivery's token.
 */
export function endedWithoutWorker(token: string, errorKind: RunErrorKind | null | undefined): boolean {
  if (errorKind !== "cancelled" && errorKind !== "dead_lettered" && errorKind !== "superseded") return false;
  return token.startsWith(PREFIX_OF[errorKind]);
}
