/**
 * @module The run result record of an end no worker performs (see
 * `end-tokens`) whose headers do not fit its terminal record.
 *
 * Such an end's outcome is its termination, read back from the terminal
 * record with the run's headers kept inline when they fit
 * `INLINE_OUTCOME_MAX_BYTES` (see `inline-outcome`). Larger headers (runs
 * take up to 32 KiB) are written as a run result record under the end's
 * token before the end commits, as a worker writes a large outcome: every
 * reader (a `wait`, `outcome()` here or in another process, the operator)
 * reads it by the token of the terminal record that committed, so the
 * outcome reports the headers the terminal hook is given. An end that
 * does not commit after all (a cancel that found its step settled) leaves
 * a record no terminal record names, removed with the run's memo.
 */
import type { SettlementEffects } from "../../queue/effects.js";
import type { RuntimeCore } from "../runtime-core.js";
import { addTerminalEffects, runOutcomeOf, type TerminationInput } from "./terminal.js";

/**
 * The effects of the end `t` no worker performs, once its result record is
 * written when its headers were left out of its terminal record (store
 * faults retried, then thrown: the end is then not made).
 */
export async function terminalEffectsWithoutWorker(core: RuntimeCore, t: TerminationInput): Promise<SettlementEffects> {
  if (t.inline === undefined)
    await core.memos.withPrefix(t.memoPrefix).writeOutcomeRecord(t.runId, { token: t.token, incarnation: t.incarnation, outcome: runOutcomeOf(t) });
  return addTerminalEffects(core.terminal, t);
}
