/**
 * @module The durable form of a run's history: one KV entry per settled
 * step, written by the step's settlement (the same commit), and one list of
 * redrives per run. Pure: keys, codecs and the bounded builder.
 *
 * KV (`{q}` the step queue):
 * - `workflow/history/{q}/{runId}/{step, 10 digits}`: a {@link StepRecord};
 *   the settlement of step `s` also deletes the entry of step
 *   `s - HISTORY_STEPS_PER_RUN`, so a run keeps at most that many;
 * - `workflow/redrives/{q}/{runId}`: the run's redrives, oldest first.
 *
 * Both are removed with the run's terminal record by the retention sweep,
 * and by a new submission under the same run id.
 */
import { StoreCorruptedError } from "../../errors.js";
import { codePointCut } from "../../option-values.js";
import type { JobAttempt } from "../../queue/record.js";
import { decodeValue, decodeValueDefining, encodeValue } from "../records/codec.js";
import { appendOwn, defineOwn, ownFieldsIfPolluted, prototypeHoldsAny, setOwn } from "../../own-fields.js";
import { type CommitOnlyBytes, type CommitTarget, encodeForCommit } from "../records/commit-bytes.js";
import { decodeMap } from "../records/records.js";
import {
  beginPlainFields,
  endPlainFields,
  fieldName,
  plainArray,
  plainBytes,
  plainCompact,
  plainField,
  plainNull,
  plainNumber,
  plainString,
} from "../../queue/record-pack.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
import {
  HISTORY_ATTEMPTS_PER_STEP,
  HISTORY_ERROR_CHARS,
  HISTORY_KEYS_PER_STEP,
  HISTORY_STACK_CHARS,
  HISTORY_STEPS_PER_RUN,
  type AttemptHistory,
  type RedriveHistory,
  type RunEndHistory,
  type SignalReceipt,
  type StepAttemptOutcome,
  type StepHistory,
  type StepTransitionHistory,
} from "./run-history.js";
import type { Building } from "../../queue/cancel-state.js";
import { HISTORY_PREFIX } from "../records/kv-keys.js";

export { HISTORY_PREFIX };
export const REDRIVES_PREFIX = `${RESERVED_KV_PREFIX}redrives/`;

/** A continuing step keeps the payload it continues with up to this size, so a redrive can start at the next step. */
export const HISTORY_NEXT_PAYLOAD_BYTES = 4096;
/** A step that ends its run keeps its own payload up to this size, so a redrive can run it again. */
export const HISTORY_FINAL_PAYLOAD_BYTES = 64 * 1024;
/** A step woken by a signal keeps the signal's payload up to this size, so a redrive hands it the same signal. */
export const HISTORY_SIGNAL_PAYLOAD_BYTES = 4096;
/** Characters kept of each memo or KV key listed in a step's history. */
const KEY_CHARS = 256;

export const runHistoryPrefix = (q: string, runId: string): string => `${HISTORY_PREFIX}${q}/${runId}/`;
export const stepHistoryKey = (q: string, runId: string, step: number): string => `${HISTORY_PREFIX}${q}/${runId}/${paddedStep(step)}`;

/** Steps whose padded text is kept: every settlement pads its step, and a run's steps count up from 0. */
const PADDED_STEPS_KEPT = 1024;
const paddedSteps: string[] = [];

/** `step` as 10 zero-padded digits, made once for the first steps of runs: the last segment of its history key. */
export function paddedStep(step: number): string {
  if (!(step >= 0 && step < PADDED_STEPS_KEPT && Number.isInteger(step))) return String(step).padStart(10, "0");
  // By the length: a read past the end finds whatever a prototype holds under that index, which became the step's key.
  // Defined, not pushed: a setter of a prototype named as an index would keep that step's text from the cache for good.
  while (paddedSteps.length <= step) appendOwn(paddedSteps, String(paddedSteps.length).padStart(10, "0"));
  return paddedSteps[step]!;
}
export const redrivesKey = (q: string, runId: string): string => `${REDRIVES_PREFIX}${q}/${runId}`;

/** One step's durable history: the public fields and the payloads a redrive needs. */
export interface StepRecord extends Omit<StepHistory, "retryable"> {
  /** The step's own payload (a step that ended its run, when small enough). */
  payload?: Uint8Array;
  /** The payload the step continued with (when small enough): the next step's input. */
  next?: Uint8Array;
  /** The signal payload the step observed (when small enough), so a redrive hands the step the same signal. */
  signalPayload?: Uint8Array;
}

/**
 * `text` within `max` characters, its end replaced by `…` when cut. Never
 * between the two halves of a surrogate pair (an emoji): UTF-8 cannot hold
 * the half left, so the stored text would end in U+FFFD.
 */
export function cutHistoryText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, codePointCut(text, max - 1))}…`;
}

/** Keeps the first attempt and the latest ones, within {@link HISTORY_ATTEMPTS_PER_STEP}. */
export function boundAttempts(all: readonly AttemptHistory[]): { attempts: AttemptHistory[]; dropped: number } {
  if (all.length <= HISTORY_ATTEMPTS_PER_STEP) return { attempts: [...all], dropped: 0 };
  const tail = all.slice(all.length - (HISTORY_ATTEMPTS_PER_STEP - 1));
  return { attempts: [all[0]!, ...tail], dropped: all.length - HISTORY_ATTEMPTS_PER_STEP };
}

const QUEUE_OUTCOMES: Record<string, StepAttemptOutcome> = {
  retried: "retried",
  dead_lettered: "dead_lettered",
  // An abandoned claim is no failure of the step's code, but it used an attempt.
  lease_expired: "interrupted",
  interrupted: "interrupted",
  requeued: "retried",
  completed: "continued",
};

/** An attempt as the queue's attempt history recorded it. */
export function attemptFromQueue(a: JobAttempt): AttemptHistory {
  const out: Building<AttemptHistory> = {
    attempt: a.attempt,
    startedAtMs: a.claimedAt ?? a.recordedAt,
    endedAtMs: a.recordedAt,
    outcome: QUEUE_OUTCOMES[a.outcome] ?? "retried",
  };
  // Each optional field set own: a setter of Object.prototype named as one would take an assignment (see `setOwn`).
  if (a.outcome === "lease_expired") setOwn(out, "error", "the lease expired before the step settled: its worker stopped, or stalled without renewing it");
  else if (a.error !== undefined) setOwn(out, "error", cutHistoryText(a.error, HISTORY_ERROR_CHARS));
  if (a.errorStack !== undefined) setOwn(out, "stack", cutHistoryText(a.errorStack, HISTORY_STACK_CHARS));
  return out;
}

/** An attempt's error text and stack, bounded. */
export function errorFieldsOf(error: unknown, text: string | undefined): { error?: string; stack?: string } {
  const out: { error?: string; stack?: string } = {};
  if (text !== undefined) setOwn(out, "error", cutHistoryText(text, HISTORY_ERROR_CHARS));
  const stack = error instanceof Error ? error.stack : undefined;
  if (typeof stack === "string") setOwn(out, "stack", cutHistoryText(stack, HISTORY_STACK_CHARS));
  return out;
}

/** What a settlement knows about the step it settles. */
export interface StepFacts {
  step: number;
  name?: string | undefined;
  payloadBytes: number;
  /** The earlier attempts (from the queue's attempt history), oldest first. */
  earlier: readonly AttemptHistory[];
  current: AttemptHistory;
  signal?: SignalReceipt | undefined;
  transition?: StepTransitionHistory | undefined;
  memoKeys: readonly string[];
  kvPuts: readonly string[];
  kvDeletes: readonly string[];
  payload?: Uint8Array | undefined;
  next?: Uint8Array | undefined;
  signalPayload?: Uint8Array | undefined;
}

const cutKey = (k: string): string => cutHistoryText(k, KEY_CHARS);

/** At most `HISTORY_KEYS_PER_STEP` of `list`, each cut to `KEY_CHARS`. */
function boundKeys(list: readonly string[]): string[] {
  return list.length === 0 ? [] : list.slice(0, HISTORY_KEYS_PER_STEP).map(cutKey);
}

/** The bounded record of one settled step. */
export function stepRecordOf(f: StepFacts): StepRecord {
  // A first attempt (most steps) has no earlier ones to bound.
  const { attempts, dropped } = f.earlier.length === 0 ? { attempts: [f.current], dropped: 0 } : boundAttempts([...f.earlier, f.current]);
  const r: Building<StepRecord> = {
    step: f.step,
    payloadBytes: f.payloadBytes,
    attempts,
    attemptsDropped: dropped,
    memoKeys: boundKeys(f.memoKeys),
    memoKeysWritten: f.memoKeys.length,
    kvPuts: boundKeys(f.kvPuts),
    kvDeletes: boundKeys(f.kvDeletes),
    kvEffects: f.kvPuts.length + f.kvDeletes.length,
  };
  if (f.name !== undefined) setOwn(r, "name", f.name);
  if (f.signal !== undefined) setOwn(r, "signal", f.signal);
  if (f.transition !== undefined) setOwn(r, "transition", f.transition);
  if (f.payload !== undefined && f.payload.byteLength <= HISTORY_FINAL_PAYLOAD_BYTES) setOwn(r, "payload", f.payload);
  if (f.next !== undefined && f.next.byteLength <= HISTORY_NEXT_PAYLOAD_BYTES) setOwn(r, "next", f.next);
  if (f.signalPayload !== undefined && f.signalPayload.byteLength <= HISTORY_SIGNAL_PAYLOAD_BYTES) setOwn(r, "signalPayload", f.signalPayload);
  return r;
}

/** The entry a settlement of step `step` removes to keep {@link HISTORY_STEPS_PER_RUN} steps. */
export function evictedStep(step: number): number | undefined {
  const old = step - HISTORY_STEPS_PER_RUN;
  return old >= 0 ? old : undefined;
}

/** Drops `undefined` fields (MessagePack would keep them as nil). */
function compact(o: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const from = o as Record<string, unknown>;
  // Own keys in `Object.entries` order, without its array of pairs (a transition is compacted per step).
  for (const k in from) {
    if (!Object.hasOwn(from, k)) continue;
    const v = from[k];
    // Defined where Object.prototype holds the name (see `setOwn`): a setter there would take an assignment.
    if (v !== undefined) setOwn(out, k, v && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array) ? compact(v) : v);
  }
  return out;
}

/**
 * An attempt as stored: `[attempt, start, end, outcome, error?, stack?]`.
 * Each row a literal, which defines its elements: a push would hand the
 * error or stack to a setter a prototype holds under index 4 or 5.
 */
function attemptRow(x: AttemptHistory): unknown[] {
  if (x.stack !== undefined) return [x.attempt, x.startedAtMs, x.endedAtMs, x.outcome, x.error ?? null, x.stack];
  if (x.error !== undefined) return [x.attempt, x.startedAtMs, x.endedAtMs, x.outcome, x.error];
  return [x.attempt, x.startedAtMs, x.endedAtMs, x.outcome];
}

/*
 * The stored form is written with every step, so it is small: short field
 * names, an attempt as a list, and empty lists and zero counts left out.
 * `s` step, `n` name, `b` payload bytes, `a` attempts `[attempt, start, end,
 * outcome, error?, stack?]`, `ad` attempts dropped, `m` memo keys, `mn` memo
 * keys written (when more than listed), `kp`/`kd` KV puts and deletes, `kn`
 * KV effects (when more than listed), `sg` signal, `tr` transition, `p`
 * payload, `nx` next payload, `sp` signal payload.
 */

export function encodeStepRecord(r: StepRecord): Uint8Array {
  return encodeValue(storedStepRecord(r));
}

/** `encodeStepRecord` for the put a step's settlement stages into a commit of `target`: the same bytes, maybe shared (see `CommitOnlyBytes`). */
export function encodeStepRecordForCommit(r: StepRecord, target: CommitTarget): CommitOnlyBytes {
  return encodeForCommit(storedStepRecord(r), target);
}

const F_STEP = fieldName("s");
const F_NAME = fieldName("n");
const F_PAYLOAD_BYTES = fieldName("b");
const F_ATTEMPTS = fieldName("a");
const F_ATTEMPTS_DROPPED = fieldName("ad");
const F_MEMO_KEYS = fieldName("m");
const F_MEMO_KEYS_WRITTEN = fieldName("mn");
const F_KV_PUTS = fieldName("kp");
const F_KV_DELETES = fieldName("kd");
const F_KV_EFFECTS = fieldName("kn");
const F_SIGNAL = fieldName("sg");
const F_TRANSITION = fieldName("tr");
const F_PAYLOAD = fieldName("p");
const F_NEXT = fieldName("nx");
const F_SIGNAL_PAYLOAD = fieldName("sp");

/**
 * `encodeStepRecordForCommit(stepRecordOf(f), target)`, written field by
 * field from the facts: the same bytes, without the record, its lists and
 * its stored form built first (a settled step writes one). A value the
 * direct writer does not take goes the general way, as it would there.
 */
export function encodeStepFactsForCommit(f: StepFacts, target: CommitTarget): CommitOnlyBytes {
  const bytes = writeStepFacts(f, target.copiesCommittedValues === true);
  return bytes === undefined ? encodeStepRecordForCommit(stepRecordOf(f), target) : (bytes as unknown as CommitOnlyBytes);
}

/**
 * The fields in `storedStepRecord`'s order, under its conditions
 * (test/workflow/step-record-writer.test.ts holds the two equal); undefined
 * when a value is not one the direct writer takes.
 */
export function writeStepFacts(f: StepFacts, shared: boolean): Uint8Array | undefined {
  beginPlainFields();
  plainField(F_STEP);
  plainNumber(f.step);
  plainField(F_PAYLOAD_BYTES);
  plainNumber(f.payloadBytes);
  plainField(F_ATTEMPTS);
  let dropped = 0;
  if (f.earlier.length === 0) {
    plainArray(1);
    writeAttempt(f.current);
  } else {
    const bounded = boundAttempts([...f.earlier, f.current]);
    dropped = bounded.dropped;
    plainArray(bounded.attempts.length);
    for (const a of bounded.attempts) writeAttempt(a);
  }
  if (f.name !== undefined) {
    plainField(F_NAME);
    plainString(f.name);
  }
  if (dropped > 0) {
    plainField(F_ATTEMPTS_DROPPED);
    plainNumber(dropped);
  }
  const memo = f.memoKeys.length;
  if (memo > 0) writeKeys(F_MEMO_KEYS, f.memoKeys);
  if (memo > HISTORY_KEYS_PER_STEP) {
    plainField(F_MEMO_KEYS_WRITTEN);
    plainNumber(memo);
  }
  const puts = f.kvPuts.length;
  const deletes = f.kvDeletes.length;
  if (puts > 0) writeKeys(F_KV_PUTS, f.kvPuts);
  if (deletes > 0) writeKeys(F_KV_DELETES, f.kvDeletes);
  if (puts + deletes > Math.min(puts, HISTORY_KEYS_PER_STEP) + Math.min(deletes, HISTORY_KEYS_PER_STEP)) {
    plainField(F_KV_EFFECTS);
    plainNumber(puts + deletes);
  }
  if (f.signal !== undefined) {
    plainField(F_SIGNAL);
    plainCompact(f.signal);
  }
  if (f.transition !== undefined) {
    plainField(F_TRANSITION);
    plainCompact(f.transition);
  }
  writeBytesField(F_PAYLOAD, f.payload, HISTORY_FINAL_PAYLOAD_BYTES);
  writeBytesField(F_NEXT, f.next, HISTORY_NEXT_PAYLOAD_BYTES);
  writeBytesField(F_SIGNAL_PAYLOAD, f.signalPayload, HISTORY_SIGNAL_PAYLOAD_BYTES);
  return endPlainFields(shared);
}

/** `attemptRow`'s list, written. */
function writeAttempt(x: AttemptHistory): void {
  const hasStack = x.stack !== undefined;
  const more = hasStack ? 2 : x.error !== undefined ? 1 : 0;
  plainArray(4 + more);
  plainNumber(x.attempt);
  plainNumber(x.startedAtMs);
  plainNumber(x.endedAtMs);
  plainString(x.outcome);
  if (more === 0) return;
  if (x.error === undefined) plainNull();
  else plainString(x.error);
  if (hasStack) plainString(x.stack!);
}

/** `boundKeys`'s list, written: at most `HISTORY_KEYS_PER_STEP` keys, each cut to `KEY_CHARS`. */
function writeKeys(name: Uint8Array, list: readonly string[]): void {
  plainField(name);
  const n = Math.min(list.length, HISTORY_KEYS_PER_STEP);
  plainArray(n);
  for (let i = 0; i < n; i++) {
    const k = list[i]!;
    plainString(typeof k === "string" && k.length > KEY_CHARS ? cutKey(k) : k);
  }
}

function writeBytesField(name: Uint8Array, b: Uint8Array | undefined, max: number): void {
  if (b === undefined || b.byteLength > max) return;
  plainField(name);
  plainBytes(b);
}

function storedStepRecord(r: StepRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    s: r.step,
    b: r.payloadBytes,
    a: r.attempts.map(attemptRow),
  };
  // Each optional field set own (see `setOwn`): a setter of Object.prototype named as one would take an assignment.
  if (r.name !== undefined) setOwn(out, "n", r.name);
  if (r.attemptsDropped > 0) setOwn(out, "ad", r.attemptsDropped);
  if (r.memoKeys.length > 0) setOwn(out, "m", r.memoKeys);
  if (r.memoKeysWritten > r.memoKeys.length) setOwn(out, "mn", r.memoKeysWritten);
  if (r.kvPuts.length > 0) setOwn(out, "kp", r.kvPuts);
  if (r.kvDeletes.length > 0) setOwn(out, "kd", r.kvDeletes);
  if (r.kvEffects > r.kvPuts.length + r.kvDeletes.length) setOwn(out, "kn", r.kvEffects);
  if (r.signal !== undefined) setOwn(out, "sg", compact(r.signal));
  if (r.transition !== undefined) setOwn(out, "tr", compact(r.transition));
  if (r.payload !== undefined) setOwn(out, "p", r.payload);
  if (r.next !== undefined) setOwn(out, "nx", r.next);
  if (r.signalPayload !== undefined) setOwn(out, "sp", r.signalPayload);
  return out;
}

const isNum = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
/** A step number, count or size: a whole number from 0 (a negative or fractional one would be shown as the run's history). */
const isWhole = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
const isStrList = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === "string");
const OUTCOMES: readonly string[] = [
  "continued",
  "succeeded",
  "failed",
  "cancelled",
  "retried",
  "dead_lettered",
  "put_back",
  "interrupted",
] satisfies StepAttemptOutcome[];

function attemptOf(row: unknown): AttemptHistory | undefined {
  if (!Array.isArray(row) || row.length < 4 || !isWhole(row[0]) || !isNum(row[1]) || !isNum(row[2]) || !OUTCOMES.includes(row[3] as string)) return undefined;
  const a: Building<AttemptHistory> = {
    attempt: row[0],
    startedAtMs: row[1],
    endedAtMs: row[2],
    outcome: row[3] as StepAttemptOutcome,
  };
  // Defined, and given as undefined when absent, so that Object.prototype's field of the name neither takes nor answers for it.
  if (typeof row[4] === "string") defineOwn(a, "error", row[4]);
  if (typeof row[5] === "string") defineOwn(a, "stack", row[5]);
  ownFieldsIfPolluted(a, ATTEMPT_OPTIONAL);
  return a;
}

const ATTEMPT_OPTIONAL: readonly (keyof AttemptHistory)[] = ["error", "stack"];
/** The stored step record's optional fields, by their stored names. */
const STORED_STEP_OPTIONAL = ["n", "ad", "m", "mn", "kp", "kd", "kn", "sg", "tr", "p", "nx", "sp"];
/** The optional fields of its signal receipt and transition. */
const SIGNAL_OPTIONAL: readonly string[] = ["payloadBytes"];
const TRANSITION_OPTIONAL: readonly string[] = ["delayMs", "runAtMs", "key", "timeoutMs", "deadlineMs"];
/** The optional fields of a decoded step record, its attempts' included (see `decodeMap`'s `nested`). */
const STEP_OPTIONAL: readonly (keyof StepRecord)[] = ["name", "signal", "transition", "payload", "next", "signalPayload"];
const STEP_NESTED = [...SIGNAL_OPTIONAL, ...TRANSITION_OPTIONAL, ...STEP_OPTIONAL, ...ATTEMPT_OPTIONAL];

export function decodeStepRecord(bytes: Uint8Array, key: string): StepRecord {
  const v = decodeMap(bytes, key, "step history entry", STORED_STEP_OPTIONAL, STEP_NESTED);
  if (v.sg !== null && typeof v.sg === "object") ownFieldsIfPolluted(v.sg, SIGNAL_OPTIONAL);
  if (v.tr !== null && typeof v.tr === "object") ownFieldsIfPolluted(v.tr, TRANSITION_OPTIONAL);
  const attempts = Array.isArray(v.a) ? v.a.map(attemptOf) : [undefined];
  const lists = [v.m, v.kp, v.kd].every((l) => l === undefined || isStrList(l));
  const counts = [v.ad, v.mn, v.kn].every((c) => c === undefined || isWhole(c));
  const ok =
    isWhole(v.s) &&
    isWhole(v.b) &&
    attempts.every((x) => x !== undefined) &&
    lists &&
    counts &&
    (v.n === undefined || typeof v.n === "string") &&
    (v.sg === undefined || (v.sg !== null && typeof v.sg === "object")) &&
    (v.tr === undefined || (v.tr !== null && typeof v.tr === "object")) &&
    (v.p === undefined || v.p instanceof Uint8Array) &&
    (v.nx === undefined || v.nx instanceof Uint8Array) &&
    (v.sp === undefined || v.sp instanceof Uint8Array);
  if (!ok)
    throw new StoreCorruptedError(
      key,
      "step history entry lacks its step or attempts, or has malformed fields (a step, size or count that is no whole number from 0)",
    );
  const memoKeys = (v.m as string[] | undefined) ?? [];
  const kvPuts = (v.kp as string[] | undefined) ?? [];
  const kvDeletes = (v.kd as string[] | undefined) ?? [];
  const r: StepRecord = {
    step: v.s as number,
    payloadBytes: v.b as number,
    attempts: attempts as AttemptHistory[],
    attemptsDropped: (v.ad as number | undefined) ?? 0,
    memoKeys,
    memoKeysWritten: (v.mn as number | undefined) ?? memoKeys.length,
    kvPuts,
    kvDeletes,
    kvEffects: (v.kn as number | undefined) ?? kvPuts.length + kvDeletes.length,
  };
  // Defined, and given as undefined when absent, so that Object.prototype's field of the name neither takes nor answers for it.
  if (v.n !== undefined) defineOwn(r, "name", v.n as string);
  if (v.sg !== undefined) defineOwn(r, "signal", v.sg as SignalReceipt);
  if (v.tr !== undefined) defineOwn(r, "transition", v.tr as StepTransitionHistory);
  if (v.p !== undefined) defineOwn(r, "payload", v.p as Uint8Array);
  if (v.nx !== undefined) defineOwn(r, "next", v.nx as Uint8Array);
  if (v.sp !== undefined) defineOwn(r, "signalPayload", v.sp as Uint8Array);
  ownFieldsIfPolluted(r, STEP_OPTIONAL);
  return r;
}

/** Redrives kept per run (the latest ones). */
export const MAX_REDRIVES = HISTORY_ATTEMPTS_PER_STEP;

export function encodeRedrives(list: readonly RedriveHistory[]): Uint8Array {
  return encodeValue(list.slice(-MAX_REDRIVES).map((r) => compact({ ...r, replaced: compact(r.replaced) })));
}

/** A redrive's fields and those of the end it replaced. */
const REDRIVE_FIELDS: readonly string[] = ["step", "atMs", "replaced", "status", "finalStep"];
const REPLACED_OPTIONAL: readonly (keyof RunEndHistory)[] = ["error", "errorKind", "supersededBy"];

export function decodeRedrives(bytes: Uint8Array, key: string): RedriveHistory[] {
  let list: unknown;
  try {
    // Maps at once while Object.prototype holds a field's name, so that no setter of it is called with the field.
    list = prototypeHoldsAny(REDRIVE_FIELDS) || prototypeHoldsAny(REPLACED_OPTIONAL) ? decodeValueDefining(bytes) : decodeValue(bytes);
  } catch {
    throw new StoreCorruptedError(key, "redrive list is not MessagePack");
  }
  if (Array.isArray(list)) {
    for (const r of list) {
      const rep = r !== null && typeof r === "object" ? (r as Record<string, unknown>).replaced : undefined;
      if (rep !== null && typeof rep === "object") ownFieldsIfPolluted(rep, REPLACED_OPTIONAL);
    }
  }
  const ok =
    Array.isArray(list) &&
    list.every((r: unknown) => {
      const m = r as Record<string, unknown> | null;
      const rep = m?.replaced as Record<string, unknown> | undefined;
      return m !== null && typeof m === "object" && isNum(m.step) && isNum(m.atMs) && rep !== null && typeof rep === "object" && typeof rep.status === "string";
    });
  if (!ok) throw new StoreCorruptedError(key, "redrive list is malformed");
  return list as RedriveHistory[];
}
