/**
 * @module Which run outcomes a terminal record keeps inline, and the
 * outcome read back from one.
 *
 * A worker that ends a run records its outcome. A small one goes into the
 * terminal record, which the terminating settlement commits anyway, so it
 * costs no object write of its own (on a local directory: no file created
 * and synced); a larger one is written as a run result record before the
 * settlement, as before. Either way a reader finds only the outcome of the
 * settlement that committed: an inline one commits with it (an attempt
 * refused or lost in a crash commits nothing), and a result record is read
 * by the token of the terminal record that committed.
 *
 * A run that ends without a worker (see `end-tokens`) has no outcome
 * beyond its termination: its terminal record keeps the run's headers
 * inline when they fit, and its outcome is read back from the record;
 * larger headers go to a run result record written before the end (see
 * `workerless-outcome`). One an earlier version wrote without them is read
 * as its termination once no result record is found, so `outcome()`
 * answers for every ended run.
 *
 * Pure: no IO.
 */
import { utf8 } from "../records/codec.js";
import { encodeInlineOutcome, type InlineOutcome, type TerminalRecord } from "../records/records.js";
import type { RunId } from "./run-id.js";
import type { RunOutcome } from "./run-types.js";
import type { Building } from "../../queue/cancel-state.js";
import { endedWithoutWorker } from "./end-tokens.js";

/**
 * Most bytes of an outcome kept in its terminal record: the MessagePack
 * encoding of its result, headers, public error and error code, plus the
 * UTF-8 bytes of its error text (which the termination holds, and which a
 * child's end then carries whole to its parent). The step queue's terminal
 * records live in memory in every process that opens the queue, for as
 * long as the run is retained, so this bounds what each retained run
 * costs beyond its termination (a terminal record without an outcome is
 * about 250 bytes). 1 KiB holds the identifiers, counts and short JSON
 * objects most runs end with; a larger outcome is written as a run result
 * record, whose put costs the same whatever its size. It stays below what
 * a child's end carries whole to its parent (see `children/child-end`), so
 * a parent reads an omitted result or error text only from a result record.
 */
export const INLINE_OUTCOME_MAX_BYTES = 1024;

/** The inline part of `o` when it fits {@link INLINE_OUTCOME_MAX_BYTES}; `undefined` when it goes to a result record. */
export function inlineOutcomeOf(o: RunOutcome): InlineOutcome | undefined {
  // A string has at least as many UTF-8 bytes as UTF-16 code units: these checks never copy a large value to measure it.
  const errorChars = o.error?.length ?? 0;
  if (errorChars > INLINE_OUTCOME_MAX_BYTES || (o.result?.byteLength ?? 0) > INLINE_OUTCOME_MAX_BYTES) return undefined;
  const inline: InlineOutcome = { headers: { ...o.headers } };
  if (o.result !== undefined) inline.result = o.result;
  if (o.publicError !== undefined) inline.publicError = o.publicError;
  if (o.errorCode !== undefined) inline.errorCode = o.errorCode;
  // Most outcomes are far below the bound: one that is below it by its largest possible encoding is not encoded to be measured.
  if (inlineBytesAtMost(inline, errorChars) <= INLINE_OUTCOME_MAX_BYTES) return inline;
  const errorBytes = o.error === undefined ? 0 : utf8(o.error).byteLength;
  return encodeInlineOutcome(inline).byteLength + errorBytes <= INLINE_OUTCOME_MAX_BYTES ? inline : undefined;
}

/**
 * Most bytes a MessagePack encoder can write for a string of `chars`
 * UTF-16 code units: the largest header (5 bytes), and at most 3 UTF-8
 * bytes per code unit (a surrogate pair's 4 bytes take 2 units).
 */
const strAtMost = (chars: number): number => 5 + 3 * chars;

/**
 * Bytes that `encodeInlineOutcome(inline)` plus the UTF-8 bytes of an error
 * text of `errorChars` code units cannot exceed: every header at the
 * largest MessagePack gives it (9 bytes, a byte array's extension form
 * included). Adds up lengths only, nothing encoded.
 */
function inlineBytesAtMost(inline: InlineOutcome, errorChars: number): number {
  let n = 9 + strAtMost(7) + 9 + 3 * errorChars;
  const headers = inline.headers as Record<string, string>;
  for (const k in headers) if (Object.hasOwn(headers, k)) n += strAtMost(k.length) + strAtMost(headers[k]!.length);
  if (inline.result !== undefined) n += strAtMost(6) + 9 + inline.result.byteLength;
  if (inline.publicError !== undefined) n += strAtMost(11) + strAtMost(inline.publicError.length);
  if (inline.errorCode !== undefined) n += strAtMost(9) + strAtMost(inline.errorCode.length);
  return n;
}

/**
 * The inline part of the outcome of a run that ends without a worker: its
 * headers, when they fit {@link INLINE_OUTCOME_MAX_BYTES} (the error text
 * is the termination's own); `undefined` when they do not, and the
 * outcome then goes to a run result record (see `workerless-outcome`).
 */
export function inlineHeadersOf(headers: Readonly<Record<string, string>>): InlineOutcome | undefined {
  const inline: InlineOutcome = { headers: { ...headers } };
  return encodeInlineOutcome(inline).byteLength <= INLINE_OUTCOME_MAX_BYTES ? inline : undefined;
}

/** The outcome a terminal record keeps inline; `null` when it keeps none. */
export function outcomeOfTerminal(t: TerminalRecord): RunOutcome | null {
  return t.inline === undefined ? null : outcomeFrom(t, t.inline);
}

/**
 * The outcome of a run that ended without a worker and whose terminal
 * record keeps none inline, when no run result record holds it (an earlier
 * version wrote the end, and left out headers that did not fit): its
 * termination, with no headers. `null` for a worker's end, whose outcome
 * is in its run result record.
 */
export function outcomeOfTermination(t: TerminalRecord): RunOutcome | null {
  return endedWithoutWorker(t.token, t.errorKind) ? outcomeFrom(t, undefined) : null;
}

/**
 * Whether `o`, read from the run result record under `t`'s token, is the
 * outcome of termination `t`. A token came back when a dead step requeued
 * with fresh attempts ended the run again (`<job id>:<attempt>`), and still
 * does for a job an earlier version requeued, which carries no count of
 * requeues (see `end-tokens`): a record read and kept before that redrive
 * answers under it, and tells itself apart by its status, step, error
 * kind or error text (which the termination holds whole, or cut short
 * when long).
 */
export function outcomeOfEnd(o: RunOutcome, t: TerminalRecord): boolean {
  if (o.status !== t.status || o.finalStep !== t.finalStep || o.errorKind !== (t.errorKind ?? undefined)) return false;
  const error = t.error ?? undefined;
  return o.error === error || (error !== undefined && o.error !== undefined && error.length < o.error.length);
}

function outcomeFrom(t: TerminalRecord, inline: InlineOutcome | undefined): RunOutcome {
  const o: Building<RunOutcome> = {
    runId: t.runId as RunId,
    status: t.status,
    headers: { ...inline?.headers },
    finalStep: t.finalStep,
  };
  // A copy: the record may be shared by later reads (a view decodes a terminal record once per stored value).
  if (inline?.result !== undefined) o.result = inline.result.slice();
  // Absent fields of a termination may be stored as null (see `terminationOf`).
  const error = t.error ?? undefined;
  const errorKind = t.errorKind ?? undefined;
  const supersededBy = t.supersededBy ?? undefined;
  if (error !== undefined) o.error = error;
  if (errorKind !== undefined) o.errorKind = errorKind;
  if (inline?.publicError !== undefined) o.publicError = inline.publicError;
  if (inline?.errorCode !== undefined) o.errorCode = inline.errorCode;
  if (supersededBy !== undefined) o.supersededBy = supersededBy as RunId;
  return o;
}
