/**
 * @module Applied marks: a record committed in the same commit that decides
 * a command's answer, holding that answer.
 *
 * A command that another process asked for (through the client inbox) may
 * be replayed after a crash of the process applying it. The replay finds
 * the mark and answers from it instead of applying the command twice. A
 * command that decides its answer without committing anything (a duplicate
 * submission, a cancel of an ended run) writes no mark: replaying it gives
 * the same answer.
 */
import { SettlementEffects } from "../../queue/effects.js";

/** @internal Where and how a command records that it was applied. */
export interface AppliedMark<Answer> {
  /** A caller KV key (under the runtime's reserved prefix). */
  readonly key: string;
  encode(answer: Answer): Uint8Array;
}

/** @internal The effects that write `mark` with `answer`; `extra` (when given) gets them added. */
export function markEffects<Answer>(mark: AppliedMark<Answer>, answer: Answer, extra = new SettlementEffects()): SettlementEffects {
  return extra.kvPut(mark.key, mark.encode(answer));
}
