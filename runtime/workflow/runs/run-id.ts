/**
 * @module Run identifiers.
 *
 * A run id names a run in every durable record (KV keys, memo paths, job
 * headers and dedup keys), so its alphabet is restricted to characters that
 * are safe in all of them without escaping.
 */
import { pooledUlids } from "../../queue/ulid-source.js";
import { InvalidRunIdError } from "../workflow-errors.js";
import { describeValue } from "../../option-values.js";

/** Longest run id, in bytes. */
export const MAX_RUN_ID_LEN = 128;

const RUN_ID_PATTERN = /^[A-Za-z0-9_-]+$/;

declare const RUN_ID_BRAND: unique symbol;

/**
 * A validated run id: 1 to {@link MAX_RUN_ID_LEN} characters of
 * `[A-Za-z0-9_-]`. It is a string at run time, so it works as a map key and
 * in templates; the brand only records that it was validated.
 *
 * @example
 * const id = RunId.parse("order-42");
 * const fresh = RunId.generate();
 */
export type RunId = string & { readonly [RUN_ID_BRAND]: true };

const nextUlid = pooledUlids();

/** Why `s` is not a run id, or `undefined` when it is one. */
function problemWith(s: unknown): string | undefined {
  if (typeof s !== "string") return `a run id must be a string, got ${describeValue(s)}`;
  if (s.length === 0) return "a run id must not be empty";
  if (s.length > MAX_RUN_ID_LEN) return `a run id is at most ${MAX_RUN_ID_LEN} bytes, got ${s.length}`;
  if (!RUN_ID_PATTERN.test(s)) return "a run id may contain only ASCII letters, digits, '_' and '-'";
  return undefined;
}

/** Constructors and checks for {@link RunId}. */
export const RunId = {
  /** Validates `s`; throws {@link InvalidRunIdError} when it is not a run id. */
  parse(s: string): RunId {
    const problem = problemWith(s);
    if (problem !== undefined) throw new InvalidRunIdError(String(s), problem);
    return s as RunId;
  },
  /** Whether `s` is a valid run id. */
  isValid(s: unknown): s is RunId {
    return problemWith(s) === undefined;
  },
  /**
   * A fresh ULID run id. Ids from one process increase strictly, even within
   * one millisecond; `nowMs` lets the caller time-stamp it with its clock.
   */
  generate(nowMs?: number): RunId {
    return nextUlid(nowMs) as RunId;
  },
} as const;
