/**
 * @module The tokens that name a run's ends, and telling a termination no
 * worker performed (an external cancel of a waiting step, dead-step
 * reconciliation, a debounce replacing a run) from a worker's.
 *
 * A worker's token is its delivery (`<job id>:<attempt>`), and a worker
 * records an outcome with it. The other ends record none of their own:
 * the outcome of such a run is its termination (see `inline-outcome`). The
 * prefixes have been the same in every version, so a terminal record
 * written before outcomes were built from them is recognised too.
 *
 * Every end has its own token. A redrive requeues a dead step job with its
 * attempts reset, so the job's next end would repeat an earlier one's
 * token; the job's lasting count of requeues (`ClaimedJob.requeues`) is
 * appended once it is above zero (`:r<n>`). The token is built from the
 * job's stored state only, never a clock: a crash and a lease's expiry,
 * or a put-back, deliver the same job again under the same count, and an
 * end committed and then replayed (a second reconciliation of one dead
 * job) carries the token it had, so its notification and its child's or
 * parent's wake-up are deduplicated. Job ids hold no `:` (letters,
 * digits, `_` and `-`), so the parts stay apart.
 *
 * Pure: no IO.
 */
import type { RunErrorKind } from "./run-types.js";

/** The kinds of end no worker performs, each with its token's prefix. */
const PREFIX_OF = { cancelled: "cancel:", dead_lettered: "dead:", superseded: "superseded:" } as const;

const WITHOUT_WORKER_PREFIXES: readonly string[] = Object.values(PREFIX_OF);

/** The kinds of end no worker performs. */
export type EndWithoutWorker = keyof typeof PREFIX_OF;

/** What tells the ends of one job apart after its `n`-th requeue from the dead letters; nothing before one. */
function requeueSuffix(requeues: number | undefined): string {
  return requeues === undefined || requeues <= 0 ? "" : `:r${requeues}`;
}

/** The token of the end a worker's delivery `attempt` of job `jobId`, requeued `requeues` times, performs. */
export function deliveryToken(jobId: string, attempt: number, requeues: number | undefined): string {
  return `${jobId}:${attempt}${requeueSuffix(requeues)}`;
}

/** The token of the end `kind` of the run whose current step is the job `jobId`, requeued `requeues` times. */
export function tokenWithoutWorker(kind: EndWithoutWorker, jobId: string, requeues?: number): string {
  return `${PREFIX_OF[kind]}${jobId}${requeueSuffix(requeues)}`;
}

/** The job id a terminal record's token names: the job whose settlement (or removal) ended the run. */
export function jobIdOfToken(token: string): string | undefined {
  // Every worker-less prefix: one left out read as a delivery token names its prefix's word ("superseded") as the job.
  const without = WITHOUT_WORKER_PREFIXES.find((p) => token.startsWith(p)) ?? "";
  const rest = token.slice(without.length);
  const colon = rest.indexOf(":");
  if (without !== "") return colon < 0 ? rest : rest.slice(0, colon);
  return colon > 0 ? rest.slice(0, colon) : undefined;
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
