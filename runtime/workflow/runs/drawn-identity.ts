/**
 * @module The ids that tell a run's submissions and passes apart: ULIDs
 * drawn by the runtime, never a step job's id. A caller's `WorkflowQueue`
 * may hand a later run's first step the id an earlier run's first step had
 * (the ack of a done job frees it), so a job id names no submission.
 */
import { pooledUlids } from "../../queue/ulid-source.js";

/**
 * A fresh id for a submission (its run record's `submission`, `memoSet` and
 * first `incarnation`) or for a pass `retryRun` re-opens (its `incarnation`).
 */
export const drawRunIdentity: () => string = pooledUlids();
