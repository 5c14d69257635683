/**
 * @module Job headers: the names and sizes a job may carry, checked on every
 * enqueue path before anything is written.
 *
 * Headers are stored in the job record (a MessagePack map in the engine),
 * copied into every claim and kept in memory while a job is pending, so
 * their count and size are bounded. `__proto__` is refused: a plain object
 * cannot hold it as an own field (assigning it sets the prototype instead),
 * and the MessagePack round trip would store it under another name.
 */
import { ValidationError } from "../errors.js";
import { isWellFormed } from "./names.js";
import { describeValue, errorText, isOptionObject } from "../option-values.js";
import { setOwn } from "../own-fields.js";

/** Most headers one job carries. */
export const MAX_HEADERS = 128;
/** Longest header name, in UTF-8 bytes. */
export const MAX_HEADER_NAME_BYTES = 256;
/** Most UTF-8 bytes of all header names and values of one job together. */
export const MAX_HEADERS_BYTES = 64 * 1024;

/** Header names no job may use. */
const FORBIDDEN_NAMES = new Set(["__proto__"]);

/** Limits a header set is checked against, and what the caller calls it in messages. */
export interface HeaderLimits {
  /** What the headers belong to in messages: "EnqueueOptions.headers", "RunOptions.headers". */
  readonly what: string;
  readonly maxCount: number;
  readonly maxNameBytes: number;
  readonly maxTotalBytes: number;
}

export const QUEUE_HEADER_LIMITS: HeaderLimits = {
  what: "EnqueueOptions.headers",
  maxCount: MAX_HEADERS,
  maxNameBytes: MAX_HEADER_NAME_BYTES,
  maxTotalBytes: MAX_HEADERS_BYTES,
};

/** A short, printable form of a header name for messages (a 32 MiB name is not echoed whole). */
function shown(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}...` : name);
}

/**
 * Throws `ValidationError` naming the first header that breaks a rule:
 * an object of string values, at most `maxCount` of them, each name 1 to
 * `maxNameBytes` bytes of well-formed text and not `__proto__`, values
 * well-formed, all of it within `maxTotalBytes`.
 */
export function validateHeaders(headers: unknown, limits: HeaderLimits = QUEUE_HEADER_LIMITS): asserts headers is Record<string, string> {
  checkedHeaders(headers, limits);
}

/**
 * `validateHeaders`, returning a copy of the headers as they were checked:
 * the names listed once and each value read once, so a header set changed
 * afterwards (or an object whose getters answer differently on a second
 * read) cannot put unchecked headers where the checked ones were meant to go.
 * Built by assignment into a fresh literal, not spread: the job record takes
 * this copy and every claim freezes it, and in V8 the frozen form of a
 * spread copy gets a hidden class of its own each time, so every later
 * lookup in a claimed job's headers missed the inline caches.
 */
export function checkedHeaders(headers: unknown, limits: HeaderLimits = QUEUE_HEADER_LIMITS): Record<string, string> {
  const { what } = limits;
  if (!isOptionObject(headers)) throw new ValidationError(`${what} must be an object of string values, got ${describeValue(headers)}`);
  let names: string[];
  try {
    names = Object.keys(headers);
  } catch (err) {
    // A Proxy's ownKeys trap can throw.
    throw new ValidationError(`listing the names of ${what} threw: ${errorText(err)}`);
  }
  if (names.length > limits.maxCount) {
    throw new ValidationError(`${what} has ${names.length} headers; at most ${limits.maxCount} are allowed`);
  }
  const copy: Record<string, string> = {};
  let total = 0;
  for (const name of names) {
    if (FORBIDDEN_NAMES.has(name)) {
      throw new ValidationError(`${what} has a header named "__proto__", which no header may use (objects cannot carry it as a field); rename it`);
    }
    let value: unknown;
    try {
      value = (headers as Record<string, unknown>)[name];
    } catch (err) {
      throw new ValidationError(`reading header ${shown(name)} of ${what} threw: ${errorText(err)}`);
    }
    if (typeof value !== "string") throw new ValidationError(`header ${shown(name)} in ${what} must be a string, got ${describeValue(value)}`);
    if (name.length === 0 || !isWellFormed(name) || !isWellFormed(value)) {
      throw new ValidationError(`header ${shown(name)} in ${what} needs a non-empty name, and name and value must be well-formed text`);
    }
    const nameBytes = Buffer.byteLength(name, "utf8");
    if (nameBytes > limits.maxNameBytes) {
      throw new ValidationError(`header ${shown(name)} in ${what} has a ${nameBytes}-byte name; names are at most ${limits.maxNameBytes} bytes`);
    }
    total += nameBytes + Buffer.byteLength(value, "utf8");
    if (total > limits.maxTotalBytes) {
      throw new ValidationError(
        `${what} hold more than ${limits.maxTotalBytes} bytes of names and values (header ${shown(name)} goes past it); keep headers small and put data in the payload`,
      );
    }
    // Defined, not assigned, under a name Object.prototype holds: a read-only field there (every one, in a realm
    // whose intrinsics are frozen) refuses the assignment, and an accessor's setter takes the header.
    setOwn(copy, name, value);
  }
  return copy;
}
