/**
 * @module How a child run's end travels to its parent: a run outcome
 * without the child's headers, as the signal payload of the parent's step
 * that waits for the child. A result too large for a signal payload stays
 * in the child's result record and the payload says so; the parent's
 * `step.children.outcome(signal)` reads it from there. The payload names
 * the termination it reports (its token and memo prefix), so the record
 * read is that end's, even when the child was re-opened and ended again.
 */
import { StoreCorruptedError } from "../../errors.js";
import { codePointCut } from "../../option-values.js";
import { MAX_KV_VALUE_SIZE } from "../../queue/names.js";
import { decodeValue, decodeValueDefining, encodeValue } from "../records/codec.js";
import { ownEveryField, prototypeHoldsAny, setOwn } from "../../own-fields.js";
import type { RunOutcome } from "../runs/run-types.js";

/** Room left in a signal payload for the outcome's other fields. */
const MAX_INLINE_RESULT_BYTES = MAX_KV_VALUE_SIZE - 16 * 1024;

/** Most characters of each error text (error, public error, code) that travel with the end. */
const MAX_INLINE_ERROR_CHARS = 8192;

/** A child's end as its parent receives it. */
export interface ChildEnd extends Omit<RunOutcome, "headers"> {
  /** The result was too large to travel with the end; it is read from the child's result record. */
  readonly resultOmitted?: true;
  /** An error text was cut short to travel with the end; the whole ones are read from the child's result record. */
  readonly errorOmitted?: true;
}

/** A child's end as its signal payload holds it: with the termination it reports, when known. */
export interface ChildEndPayload extends ChildEnd {
  /** The token of the child's terminal record that reported this end (absent in ends written before it was kept). */
  readonly token?: string;
  /** Where the child's result record of that end lives. */
  readonly memoPrefix?: string;
  /** The incarnation of the child's pass that ended (absent in ends written before it was kept): its result record names it too. */
  readonly incarnation?: string;
}

/** Which termination of the child an end reports. */
export interface EndSource {
  readonly token: string;
  readonly memoPrefix: string;
  /** The ended pass's incarnation (its terminal record's). */
  readonly incarnation?: string | undefined;
}

/** Encodes the end of a child run, ended by termination `source`, for its parent's signal buffer. */
export function encodeChildEnd(o: RunOutcome, source: EndSource): Uint8Array {
  const big = o.result !== undefined && o.result.byteLength > MAX_INLINE_RESULT_BYTES;
  const out: Record<string, unknown> = {
    runId: o.runId,
    status: o.status,
    finalStep: o.finalStep,
    token: source.token,
    memoPrefix: source.memoPrefix,
  };
  if (source.incarnation !== undefined) setOwn(out, "incarnation", source.incarnation);
  // Each optional field set own (see `setOwn`): a setter of Object.prototype named as one would take an assignment.
  if (o.result !== undefined && !big) setOwn(out, "result", o.result);
  if (big) setOwn(out, "resultOmitted", true);
  if (o.errorKind !== undefined) setOwn(out, "errorKind", o.errorKind);
  // Error texts are bounded so the end always fits a signal payload, whatever the child's error held.
  for (const field of ["error", "publicError", "errorCode"] as const) {
    const text = o[field];
    if (text === undefined) continue;
    // Cut at a character boundary: half an emoji would reach the parent as U+FFFD.
    setOwn(out, field, text.length > MAX_INLINE_ERROR_CHARS ? `${text.slice(0, codePointCut(text, MAX_INLINE_ERROR_CHARS))}...` : text);
    if (text.length > MAX_INLINE_ERROR_CHARS) setOwn(out, "errorOmitted", true);
  }
  return encodeValue(out);
}

const STATUSES = new Set(["succeeded", "failed", "cancelled"]);

/** The fields an end's encoding leaves out when absent, made its own while `Object.prototype` holds one of their names. */
const CHILD_END_OPTIONAL: readonly (keyof ChildEndPayload)[] = [
  "result",
  "error",
  "errorKind",
  "publicError",
  "errorCode",
  "supersededBy",
  "resultOmitted",
  "errorOmitted",
  "token",
  "memoPrefix",
  "incarnation",
];

/** Decodes a child's end; a `StoreCorruptedError` naming `where` when `bytes` is not one. */
export function decodeChildEnd(bytes: Uint8Array, where: string): ChildEndPayload {
  // Asked before the decode, so that a setter of one of those names is not called with the end's field.
  const polluted = prototypeHoldsAny(CHILD_END_OPTIONAL);
  let v: unknown;
  try {
    v = polluted ? decodeValueDefining(bytes) : decodeValue(bytes);
  } catch {
    v = undefined;
  }
  if (polluted && v !== null && typeof v === "object") ownEveryField(v, CHILD_END_OPTIONAL);
  const r = v as Record<string, unknown> | undefined;
  const ok =
    r !== null &&
    typeof r === "object" &&
    typeof r.runId === "string" &&
    typeof r.status === "string" &&
    STATUSES.has(r.status) &&
    typeof r.finalStep === "number" &&
    (r.result === undefined || r.result instanceof Uint8Array) &&
    (r.error === undefined || typeof r.error === "string") &&
    (r.token === undefined || typeof r.token === "string") &&
    (r.memoPrefix === undefined || typeof r.memoPrefix === "string") &&
    (r.incarnation === undefined || typeof r.incarnation === "string");
  if (!ok) throw new StoreCorruptedError(where, "is not the end of a child run: wait for a child with the completion key its start returned");
  return r as unknown as ChildEndPayload;
}
