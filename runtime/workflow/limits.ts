/**
 * @module The limits of what a caller passes to the workflow runtime, and
 * the checks that enforce them where the caller passes it (submit, signal,
 * memo, step outcomes), so an error names the caller's header, signal key
 * or memo key, never the runtime's internal record it would have become.
 * docs/limits.md lists them with the error each gives.
 */
import { ValidationError } from "../errors.js";
import { describeValue } from "../option-values.js";
import { checkedHeaders, MAX_HEADER_NAME_BYTES, type HeaderLimits } from "../queue/headers.js";
import { isWellFormed, MAX_KV_VALUE_SIZE } from "../queue/names.js";
import { MAX_OBJECT_KEY_BYTES, validateObjectKey } from "../store/keys.js";

/** Most user headers of a run (step jobs add a few of the runtime's own). */
export const MAX_RUN_HEADERS = 64;
/** Most UTF-8 bytes of a run's header names and values together: they live in the run record, beside its other fields. */
export const MAX_RUN_HEADERS_BYTES = 32 * 1024;
/** Longest signal correlation key, in UTF-8 bytes. */
export const MAX_CORRELATION_KEY_BYTES = 512;
/** Largest signal payload: a buffered signal is held in one KV value, so a delivered one is held to the same size. */
export const MAX_SIGNAL_PAYLOAD_BYTES = MAX_KV_VALUE_SIZE;
/** Longest memo key, in UTF-8 bytes (keys are hashed into object names, so this bounds memory, not the layout). */
export const MAX_MEMO_KEY_BYTES = 1024;
/** Largest memo value: one object, read whole into memory on a hit. */
export const MAX_MEMO_VALUE_BYTES = 16 * 1024 * 1024;
/** Largest run input, step payload or run result: each is held whole in memory while its step runs. */
export const MAX_RUN_PAYLOAD_BYTES = 64 * 1024 * 1024;
/** Longest run-group member key, in UTF-8 bytes (it is part of the member record's key). */
export const MAX_GROUP_KEY_BYTES = 512;
/** Longest run-group id, in UTF-8 bytes (ids are hashed into a fixed-size tag). */
export const MAX_GROUP_ID_BYTES = 512;
/** Most members of one run group: its manifest (every member's key and input) is one object, read and rewritten whole. */
export const MAX_GROUP_MEMBERS = 10_000;
/** Most bytes of member inputs in one run group's manifest. */
export const MAX_GROUP_INPUT_BYTES = 64 * 1024 * 1024;

const RUN_HEADER_LIMITS: HeaderLimits = {
  what: "RunOptions.headers",
  maxCount: MAX_RUN_HEADERS,
  maxNameBytes: MAX_HEADER_NAME_BYTES,
  maxTotalBytes: MAX_RUN_HEADERS_BYTES,
};

const utf8 = (s: string): number => Buffer.byteLength(s, "utf8");

/** A printable excerpt of a caller's string for messages: a megabyte key is not echoed whole. */
export function excerpt(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}...` : s);
}

/** Checks a run's headers against the run limits (and every queue header rule); `what` names them as the caller wrote them. */
export function checkRunHeaders(headers: unknown, what = RUN_HEADER_LIMITS.what): Record<string, string> {
  return checkedHeaders(headers, what === RUN_HEADER_LIMITS.what ? RUN_HEADER_LIMITS : { ...RUN_HEADER_LIMITS, what });
}

/** Checks a signal correlation key: 1 to {@link MAX_CORRELATION_KEY_BYTES} bytes of well-formed text. */
export function checkCorrelationKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0) throw new ValidationError("a signal correlation key must be a non-empty string");
  if (!isWellFormed(key)) throw new ValidationError(`signal correlation key ${excerpt(key)} is not well-formed text (it has a lone surrogate)`);
  const n = utf8(key);
  if (n > MAX_CORRELATION_KEY_BYTES) {
    throw new ValidationError(`signal correlation key ${excerpt(key)} is ${n} bytes; keys are at most ${MAX_CORRELATION_KEY_BYTES} bytes of UTF-8`);
  }
}

/** Checks a signal payload: bytes, at most {@link MAX_SIGNAL_PAYLOAD_BYTES}, whether or not a run waits. */
export function checkSignalPayload(correlationKey: string, payload: unknown): asserts payload is Uint8Array {
  if (!(payload instanceof Uint8Array)) throw new ValidationError("a signal payload must be a Uint8Array");
  if (payload.byteLength > MAX_SIGNAL_PAYLOAD_BYTES) {
    throw new ValidationError(
      `the payload of signal ${excerpt(correlationKey)} is ${payload.byteLength} bytes; signal payloads are at most ${MAX_SIGNAL_PAYLOAD_BYTES} bytes, so send a reference (an object key) instead of the data`,
    );
  }
}

/** Checks a memo key: a string of 0 to {@link MAX_MEMO_KEY_BYTES} bytes of well-formed text. */
export function checkMemoKey(key: unknown): asserts key is string {
  if (typeof key !== "string") throw new ValidationError(`a memo key must be a string, got ${describeValue(key)}`);
  if (!isWellFormed(key)) throw new ValidationError(`memo key ${excerpt(key)} is not well-formed text (it has a lone surrogate)`);
  const n = utf8(key);
  if (n > MAX_MEMO_KEY_BYTES)
    throw new ValidationError(
      `memo key ${excerpt(key)} is ${n} bytes; memo keys are at most ${MAX_MEMO_KEY_BYTES} bytes (use memoizedByContent for long inputs)`,
    );
}

/** Checks a memo value's size. */
export function checkMemoValue(key: string, bytes: Uint8Array): void {
  if (bytes.byteLength > MAX_MEMO_VALUE_BYTES) {
    throw new ValidationError(`the value of memo key ${excerpt(key)} is ${bytes.byteLength} bytes; memo values are at most ${MAX_MEMO_VALUE_BYTES} bytes`);
  }
}

/** Checks the size of a run input, step payload or run result; `what` names it ("the input of run \"r\""). */
export function checkRunPayload(what: string, bytes: Uint8Array): void {
  if (bytes.byteLength > MAX_RUN_PAYLOAD_BYTES) {
    throw new ValidationError(`${what} is ${bytes.byteLength} bytes; run inputs, step payloads and results are at most ${MAX_RUN_PAYLOAD_BYTES} bytes`);
  }
}

/**
 * Checks a run-group id and member key, and the group's display id (its id
 * as its user named it, stored in run listings) when given: UTF-8 cannot
 * hold a lone surrogate, which would be stored as U+FFFD.
 */
export function checkGroupMember(groupId: unknown, key: unknown, displayId?: unknown): void {
  checkGroupId("a run group id", groupId);
  if (displayId !== undefined) checkGroupId("a run group's display id", displayId);
  if (typeof key !== "string" || key.length === 0 || !isWellFormed(key) || utf8(key) > MAX_GROUP_KEY_BYTES) {
    throw new ValidationError(
      `a run group member key must be 1 to ${MAX_GROUP_KEY_BYTES} bytes of well-formed text, got ${typeof key === "string" ? excerpt(key) : describeValue(key)}`,
    );
  }
}

function checkGroupId(what: string, id: unknown): void {
  if (typeof id !== "string" || id.length === 0 || !isWellFormed(id) || utf8(id) > MAX_GROUP_ID_BYTES) {
    throw new ValidationError(
      `${what} must be 1 to ${MAX_GROUP_ID_BYTES} bytes of well-formed text, got ${typeof id === "string" ? excerpt(id) : describeValue(id)}`,
    );
  }
}

/** Checks that a run group stays within its member count and input bytes once `added` joins the `existing` members. */
export function checkGroupSize(groupId: string, existing: readonly { input: Uint8Array }[], added: readonly { input: Uint8Array }[]): void {
  const count = existing.length + added.length;
  if (count > MAX_GROUP_MEMBERS) {
    throw new ValidationError(
      `run group ${excerpt(groupId)} would have ${count} members; a group holds at most ${MAX_GROUP_MEMBERS}, so split the work over several groups`,
    );
  }
  let bytes = 0;
  for (const m of existing) bytes += m.input.byteLength;
  for (const m of added) bytes += m.input.byteLength;
  if (bytes > MAX_GROUP_INPUT_BYTES) {
    throw new ValidationError(
      `the member inputs of run group ${excerpt(groupId)} would take ${bytes} bytes; a group holds at most ${MAX_GROUP_INPUT_BYTES} bytes of inputs, so pass references (object keys) as inputs or split the group`,
    );
  }
}

/** Longest memo prefix: the runtime's object keys under it add up to 256 bytes (a replay record's, with a 128-character run id). */
export const MAX_MEMO_PREFIX_BYTES = MAX_OBJECT_KEY_BYTES - 256;

/**
 * Checks a memo prefix (the builder's, or a client's copy of the owner's):
 * every memo, replay and result record key starts with it, so one that
 * cannot start an object key would fail them all later. `what` names it in
 * the message.
 */
export function checkMemoPrefix(what: string, prefix: unknown): asserts prefix is string {
  if (typeof prefix !== "string" || prefix.length === 0 || prefix.endsWith("/"))
    throw new ValidationError(`${what} must be a non-empty prefix without a trailing '/', got ${describeValue(prefix)}`);
  try {
    validateObjectKey(`${prefix}/x`);
  } catch (err) {
    throw new ValidationError(`${what} ${JSON.stringify(prefix)} cannot start object keys`, err instanceof ValidationError ? err.issues : [String(err)]);
  }
  if (Buffer.byteLength(prefix) > MAX_MEMO_PREFIX_BYTES) {
    throw new ValidationError(
      `${what} must be at most ${MAX_MEMO_PREFIX_BYTES} bytes (the keys under it add up to 256 of the store's ${MAX_OBJECT_KEY_BYTES}), got ${Buffer.byteLength(prefix)}`,
    );
  }
}

/** The most steps one runtime may process at once (`maxConcurrentSteps`): each slot may hold a claimed step in memory. */
export const MAX_CONCURRENT_STEPS = 65_536;
