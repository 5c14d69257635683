/**
 * @module Durable memo: a retry-safety cache of within-step side effects.
 *
 * Entries live in the object store, outside any queue transaction, so a
 * memo is a cache whose readers tolerate absence by re-executing; the
 * durable channel between steps is a continuing outcome's payload.
 */
import type { ObjectStore } from "../../store/object-store.js";
import { listedUnder } from "../../store/listing-pages.js";
import { decodeValue, encodeValue, sha256Hex } from "../records/codec.js";
import { memoEntryKey, memoSetSegment, runMemoRoot, runReplayRoot, runResultKey, runResultPrefix } from "../records/kv-keys.js";
import { decodeOutcomeRecord, encodeOutcomeRecord, type OutcomeRecord } from "../records/records.js";
import { RUN_OUTCOME_MEMO_KEY } from "../records/reserved.js";
import { MemoUnavailableError, ReservedKeyError } from "../workflow-errors.js";
import { checkMemoKey, checkMemoPrefix, checkMemoValue, excerpt } from "../limits.js";
import { checkStoreArg } from "../../store/store-check.js";
import { ValidationError } from "../../errors.js";
import { describeValue } from "../../option-values.js";
import { bytesAtCall } from "../bytes-at-call.js";
import { isStoreFault, retryStore } from "../store-retry.js";
import { forEachBounded } from "../bounded.js";
import { OutcomeCache } from "./outcome-cache.js";
import { RunId } from "../runs/run-id.js";
import { isCount } from "../../value-ranges.js";

/** Object deletes in flight at once when a run's memo entries are cleared. */
export const CLEAR_CONCURRENCY = 16;
/** Keys listed (and held in memory) at once when a run's memo entries are cleared. */
export const CLEAR_CHUNK = 1000;

/** Where stores written by earlier versions keep the run result record of one terminating settlement: in the run memo (see `runResultKey` for today's). */
function legacyOutcomeRecordKey(prefix: string, runId: string, token: string): string {
  return memoEntryKey(prefix, runId, "run", `${RUN_OUTCOME_MEMO_KEY}:${token}`);
}

/** The memo key {@link Memo.memoizedByContent} derives from an input value. */
export function contentKeyOf(input: unknown): string {
  return `content:${sha256Hex(encodeValue(input))}`;
}

/**
 * The step of a replay record, from its key past the run's replay root: the
 * first segment, or the second under a memo set (`@...`); NaN for no step.
 * A redrive clears the step's records of every memo set: a set other than
 * the run's own is an ended run's, which nothing reads again.
 */
function replayStepOf(underRoot: string): number {
  const parts = underRoot.split("/");
  return Number(parts[0]!.startsWith("@") ? parts[1] : parts[0]);
}

/** Sets the list a memo notes its writes in, and who keeps them; assigned by `Memo`'s static block, which alone reaches the private fields. */
let setWriteWatcher: (memo: Memo, written: MemoWrites, owner: MemoOwner | undefined) => void;

/**
 * @internal Whether run `runId` still keeps the memo entries of its memo set `memoSet`, asked
 * after each write of a step's memo: a step still running when its run was removed must not
 * leave entries behind the removal's clearing of them (the entry is deleted again).
 */
export interface MemoOwner {
  keeps(runId: string, memoSet: string | undefined): Promise<boolean>;
}

/**
 * @internal Where a memo notes the entries it writes: `memoKeys`, made on the first write (most
 * steps write none, and a list made per step for them was allocation for nothing).
 */
export interface MemoWrites {
  memoKeys: string[] | undefined;
}

/**
 * @internal Appends to `written.memoKeys` the user key of every entry `memo` writes (a run's history
 * lists them), prefixed `run:` for the run memo; with `owner`, each entry written is deleted again when
 * the owner says its run no longer keeps it. A list and a shared owner, not a callback: set for every
 * step run, and a closure per memo per step was allocation for the few steps that write memo entries.
 */
export function watchMemoWrites(memo: Memo, written: MemoWrites, owner?: MemoOwner): Memo {
  setWriteWatcher(memo, written, owner);
  return memo;
}

/**
 * One memo namespace: the entries of one step of a run, or the run-scoped
 * entries every step of the run shares.
 *
 * @example
 * const draft = await step.memo.memoized("draft", () => callModel(step.payload));
 */
export class Memo {
  readonly #store: ObjectStore;
  readonly #prefix: string;
  /** The run this namespace belongs to. */
  readonly runId: string;
  /** The step number, or `"run"` for the run-scoped namespace. */
  readonly scope: number | "run";
  /** The memo set of the run's submission (see `RunRecord.memoSet`); `undefined` for a run submitted before memo sets existed. */
  readonly memoSet: string | undefined;
  /** Where each write is noted (see `watchMemoWrites`): a field rather than a weak map entry, set for every step run. */
  #written: MemoWrites | undefined;
  /** Asked after each write whether the run still keeps it (see `MemoOwner`). */
  #owner: MemoOwner | undefined;

  static {
    setWriteWatcher = (memo, written, owner) => {
      memo.#written = written;
      memo.#owner = owner;
    };
  }

  /** Prefer `MemoStore.newMemo` / `MemoStore.runMemo`. */
  constructor(store: ObjectStore, memoPrefix: string, runId: string, scope: number | "run", memoSet?: string) {
    this.#store = store;
    this.#prefix = memoPrefix;
    this.runId = runId;
    this.scope = scope;
    this.memoSet = memoSet;
  }

  /** The step number of a per-step memo, `undefined` for the run memo. */
  get stepNumber(): number | undefined {
    return this.scope === "run" ? undefined : this.scope;
  }

  #objectKey(key: string): string {
    return memoEntryKey(this.#prefix, this.runId, this.scope, key, this.memoSet);
  }

  #checkWritable(key: string): void {
    checkMemoKey(key);
    if (this.scope === "run" && (key === RUN_OUTCOME_MEMO_KEY || key.startsWith(`${RUN_OUTCOME_MEMO_KEY}:`))) {
      throw new ReservedKeyError(key, "the run result record is kept under that key");
    }
  }

  /** Reads the entry, retrying store faults; `MemoUnavailableError` when the store keeps failing. */
  async #read(key: string): Promise<Uint8Array | null> {
    const objectKey = this.#objectKey(key);
    try {
      const found = await retryStore(() => this.#store.get(objectKey));
      return found === null ? null : found.body;
    } catch (e) {
      // Only faults become MemoUnavailableError (retried uncounted); anything else is the error it is.
      throw isStoreFault(e) ? new MemoUnavailableError(this.runId, this.scope, key, "read", e) : e;
    }
  }

  /** Writes the entry, retrying store faults (a put is idempotent); `MemoUnavailableError` when the store keeps failing. */
  async #write(key: string, value: Uint8Array): Promise<void> {
    checkMemoValue(key, value);
    const objectKey = this.#objectKey(key);
    try {
      await retryStore(() => this.#store.put(objectKey, value));
    } catch (e) {
      throw isStoreFault(e) ? new MemoUnavailableError(this.runId, this.scope, key, "write", e) : e;
    }
    // Asked after the put: a removal whose last commit came before the ask is seen (the run is gone) and the entry goes
    // again; one whose commit came after it clears the memo once more after that commit, finding the entry itself.
    if (this.#owner !== undefined && !(await this.#owner.keeps(this.runId, this.memoSet))) {
      try {
        await retryStore(() => this.#store.delete(objectKey));
      } catch (e) {
        throw isStoreFault(e) ? new MemoUnavailableError(this.runId, this.scope, key, "write", e) : e;
      }
      return;
    }
    const written = this.#written;
    if (written !== undefined) (written.memoKeys ??= []).push(this.scope === "run" ? `run:${key}` : key);
  }

  /** The stored bytes under `key`, or `null`. */
  async get(key: string): Promise<Uint8Array | null> {
    checkMemoKey(key);
    return this.#read(key);
  }

  /** Stores `value` under `key`, overwriting any earlier value. Durable when it resolves. */
  async put(key: string, value: Uint8Array): Promise<void> {
    this.#checkWritable(key);
    if (!(value instanceof Uint8Array)) throw new ValidationError(`the value of memo key ${excerpt(key)} must be a Uint8Array; use memoized for other values`);
    // Taken now: the store may read the bytes after an await (a retried put, a put that streams its body).
    await this.#write(key, bytesAtCall(`the value of memo key ${excerpt(key)}`, value));
  }

  /**
   * The value stored under `key`, or else the value of `compute()`, stored
   * and returned. Values are MessagePack with named fields. An entry that
   * fails to decode is treated as absent and overwritten; an error from
   * `compute` propagates and stores nothing. Store faults are retried with
   * backoff; `MemoUnavailableError` when the store keeps failing (the
   * worker then runs the step again without counting an attempt).
   */
  async memoized<T>(key: string, compute: () => Promise<T>): Promise<T> {
    this.#checkWritable(key);
    const stored = await this.#read(key);
    if (stored !== null) {
      try {
        return decodeValue(stored) as T;
      } catch {
        // A damaged or foreign entry is a cache miss: recompute and overwrite.
      }
    }
    const value = await compute();
    await this.#write(key, encodeValue(value));
    return value;
  }

  /** The memo key derived from `input`: `content:` + hex SHA-256 of its MessagePack encoding. */
  contentKey(input: unknown): string {
    return contentKeyOf(input);
  }

  /** {@link Memo.memoized} under {@link Memo.contentKey}`(input)`. Include an operation name in `input` when several operations may share inputs. */
  memoizedByContent<T>(input: unknown, compute: () => Promise<T>): Promise<T> {
    return this.memoized(contentKeyOf(input), compute);
  }

  /** {@link Memo.get} under {@link Memo.contentKey}`(input)`. */
  contentGet(input: unknown): Promise<Uint8Array | null> {
    return this.get(contentKeyOf(input));
  }

  /** {@link Memo.put} under {@link Memo.contentKey}`(input)`. */
  contentPut(input: unknown, value: Uint8Array): Promise<void> {
    return this.put(contentKeyOf(input), value);
  }
}

/**
 * A memo store's run id: a run id (`InvalidRunIdError` otherwise), since it
 * names a folder, and one with a slash would name a folder inside another
 * run's (`"a/0"`: run `a`'s step 0).
 */
function checkRunIdArg(runId: unknown): string {
  return RunId.parse(runId as string);
}

/** A memo store's step number: a whole number from 0, as a run's steps are numbered. */
function checkStepArg(step: unknown, what = "a memo's step"): number {
  if (isCount(step)) return step;
  throw new ValidationError(`${what} must be a run's step number (a whole number from 0), got ${describeValue(step)}`);
}

/** `memoSet` as a memo store takes it: absent, or a run's `memoSet` (a string); anything else is a `ValidationError`. */
function checkMemoSet(memoSet: unknown): string | undefined {
  if (memoSet === undefined || (typeof memoSet === "string" && memoSet.length > 0)) return memoSet;
  throw new ValidationError(`a memo set must be a run's memoSet (a non-empty string, as inspectRun reports it) or absent, got ${describeValue(memoSet)}`);
}

/** Set while `MemoStore.withPrefix` builds a store beside a checked one (see the constructor). */
let derived = false;

/**
 * The memo entries of every run under one prefix. A process without a
 * runtime builds one at the runtime's memo prefix to read or clear entries.
 *
 * @example
 * const memos = new MemoStore(store, "workflow-steps-memo");
 * await memos.clearMemosForRun(runId);
 */
export class MemoStore {
  readonly store: ObjectStore;
  readonly prefix: string;
  /** Shared by every prefix of this store (see `withPrefix`): the run result records read or written last. */
  #outcomes: OutcomeCache;

  constructor(store: ObjectStore, memoPrefix: string) {
    // Checked here, not at the first read or write: a wrong store would otherwise fail inside a step, far from
    // here. Not for `withPrefix`, per step: its store was checked, its prefix is one the runtime stored.
    if (!derived) {
      checkStoreArg("new MemoStore's store", store);
      checkMemoPrefix("new MemoStore's memoPrefix", memoPrefix);
    }
    this.store = store;
    this.prefix = memoPrefix;
    this.#outcomes = new OutcomeCache();
  }

  /** The memo entries under `memoPrefix` in the same object store (this store when the prefix is its own). */
  withPrefix(memoPrefix: string): MemoStore {
    if (memoPrefix === this.prefix) return this;
    derived = true;
    let other: MemoStore;
    try {
      other = new MemoStore(this.store, memoPrefix);
    } finally {
      derived = false;
    }
    other.#outcomes = this.#outcomes;
    return other;
  }

  /**
   * The per-step memo of `(runId, step)` in the memo set `memoSet` (the
   * run's `memoSet`, which `inspectRun` reports; without it, the memos of a
   * run submitted before memo sets existed).
   */
  newMemo(runId: string, step: number, memoSet?: string): Memo {
    return new Memo(this.store, this.prefix, checkRunIdArg(runId), checkStepArg(step), checkMemoSet(memoSet));
  }

  /** The run-scoped memo of `runId` in the memo set `memoSet` (see `newMemo`). */
  runMemo(runId: string, memoSet?: string): Memo {
    return new Memo(this.store, this.prefix, checkRunIdArg(runId), "run", checkMemoSet(memoSet));
  }

  /**
   * @internal Removes the replay records of the steps of `runId` numbered
   * `fromStep` and later, so a redriven run runs them again instead of
   * replaying how they ended.
   */
  async clearReplaysFrom(runId: string, fromStep: number): Promise<void> {
    const root = runReplayRoot(this.prefix, checkRunIdArg(runId));
    checkStepArg(fromStep, "clearReplaysFrom's fromStep");
    await this.#deleteUnderWhere(root, (k) => replayStepOf(k.slice(root.length)) >= fromStep);
  }

  /**
   * Deletes the keys under `root` that `doomed` picks; returns how many. In
   * chunks, resuming after the last key listed, so memory stays bounded
   * however many keys there are.
   */
  async #deleteUnderWhere(root: string, doomed: (key: string) => boolean): Promise<number> {
    let removed = 0;
    let startAfter: string | undefined;
    for (;;) {
      const listed: string[] = [];
      // Only keys under the run's folder and past the last one: a store whose listing ignores either must not get another run's keys deleted.
      for await (const o of listedUnder(this.store, root, startAfter === undefined ? {} : { startAfter })) {
        listed.push(o.key);
        if (listed.length >= CLEAR_CHUNK) break;
      }
      const picked = listed.filter(doomed);
      await forEachBounded(picked, CLEAR_CONCURRENCY, (k) => retryStore(() => this.store.delete(k)));
      removed += picked.length;
      if (listed.length < CLEAR_CHUNK) return removed;
      startAfter = listed[listed.length - 1];
    }
  }

  /**
   * Removes every memo entry (both namespaces, the run result record
   * included) and every replay record of `runId`; returns how many objects
   * it removed. Deletes run {@link CLEAR_CONCURRENCY} at a time, over
   * chunks of at most {@link CLEAR_CHUNK} listed keys, so memory stays
   * bounded however many entries a run has. `signal` stops it between
   * chunks (what is left is removed by a later call).
   */
  async clearMemosForRun(runId: string, signal?: AbortSignal): Promise<number> {
    checkRunIdArg(runId);
    // Before and after: a read while the clear runs may have kept the record again.
    this.#dropKeptOutcomes(runId);
    try {
      return await this.#clearMemosForRun(runId, signal);
    } finally {
      this.#dropKeptOutcomes(runId);
    }
  }

  #dropKeptOutcomes(runId: string): void {
    this.#outcomes.dropUnder(runResultPrefix(this.prefix, runId));
    this.#outcomes.dropUnder(runMemoRoot(this.prefix, runId));
  }

  /**
   * @internal Removes the memo entries and replay records of one memo set
   * of `runId` (an ended run's, which a later submission of the id replaced);
   * the other sets, and the run's result records, stay. Returns how many
   * objects it removed.
   */
  async clearMemoSet(runId: string, memoSet: string): Promise<number> {
    checkRunIdArg(runId);
    const set = checkMemoSet(memoSet);
    if (set === undefined) throw new ValidationError("clearMemoSet takes the memo set to clear (a run's memoSet)");
    const seg = `${memoSetSegment(set)}/`;
    return this.#clearUnder([`${runMemoRoot(this.prefix, runId)}${seg}`, `${runReplayRoot(this.prefix, runId)}${seg}`], undefined);
  }

  /**
   * @internal Removes the memo entries and replay records of `runId` kept
   * outside every memo set, where runs submitted before memo sets existed
   * keep theirs (a removed run's, which a later submission of the id must
   * not read), sparing the run result record that an earlier version wrote
   * in the run memo for termination `spareToken` (the end now under the id).
   * Memo sets and today's result records stay. Returns how many objects it
   * removed.
   */
  async clearUnsetMemos(runId: string, spareToken?: string): Promise<number> {
    checkRunIdArg(runId);
    this.#dropKeptOutcomes(runId);
    const spared = spareToken === undefined ? undefined : legacyOutcomeRecordKey(this.prefix, runId, spareToken);
    let removed = 0;
    for (const root of [runMemoRoot(this.prefix, runId), runReplayRoot(this.prefix, runId)]) {
      // A memo set's folder starts with `@`; a step number or `run` is the layout before memo sets.
      removed += await this.#deleteUnderWhere(root, (k) => !k.startsWith("@", root.length) && k !== spared);
    }
    return removed;
  }

  #clearMemosForRun(runId: string, signal: AbortSignal | undefined): Promise<number> {
    return this.#clearUnder([runMemoRoot(this.prefix, runId), runReplayRoot(this.prefix, runId), runResultPrefix(this.prefix, runId)], signal);
  }

  async #clearUnder(roots: readonly string[], signal: AbortSignal | undefined): Promise<number> {
    let removed = 0;
    for (const root of roots) {
      let startAfter: string | undefined;
      for (;;) {
        if (signal?.aborted === true) return removed;
        // List a chunk, then delete it: listing resumes after the chunk's last key (by key, not
        // by position), so deleting what was listed cannot make the next listing skip a key.
        const keys: string[] = [];
        // Only keys under this folder and past the last one (see `clearReplaysFrom`).
        for await (const o of listedUnder(this.store, root, startAfter === undefined ? {} : { startAfter })) {
          keys.push(o.key);
          if (keys.length >= CLEAR_CHUNK) break;
        }
        await forEachBounded(keys, CLEAR_CONCURRENCY, (k) => this.store.delete(k));
        removed += keys.length;
        if (keys.length < CLEAR_CHUNK) break;
        startAfter = keys[keys.length - 1];
      }
    }
    return removed;
  }

  /**
   * The run result record written for the terminating settlement `token`,
   * or `null` when none was written (or it is unreadable). Store faults
   * are retried with backoff; the last one is rethrown.
   */
  async readOutcomeRecord(runId: string, token: string): Promise<OutcomeRecord | null> {
    const key = runResultKey(this.prefix, runId, token);
    // The end of a run is often asked for twice in a row (`wait`, then `outcome`): the second answer costs no read.
    const kept = this.#outcomes.take(key);
    const found = kept === undefined ? await this.#getOutcomeRecord(runId, token) : { key, body: kept };
    if (found === null) return null;
    try {
      const record = decodeOutcomeRecord(found.body, found.key);
      if (kept === undefined) this.#outcomes.set(key, found.body);
      return record;
    } catch {
      // Readers of the memo tolerate absence; a damaged record reads as none.
      return null;
    }
  }

  /** Whether a run result record of `runId` for termination `token` is stored (readable or not). */
  async hasOutcomeRecord(runId: string, token: string): Promise<boolean> {
    return (await this.#getOutcomeRecord(runId, token)) !== null;
  }

  /** The stored run result record and the key it was found under: today's key, else where earlier versions wrote it. */
  async #getOutcomeRecord(runId: string, token: string): Promise<{ key: string; body: Uint8Array } | null> {
    for (const key of [runResultKey(this.prefix, runId, token), legacyOutcomeRecordKey(this.prefix, runId, token)]) {
      const found = await retryStore(() => this.store.get(key));
      if (found !== null) return { key, body: found.body };
    }
    return null;
  }

  /**
   * Writes the run result record; the worker does this before a
   * terminating settlement whose outcome is too large for the terminal
   * record. Each settlement attempt writes under its own
   * token, so a stale delivery whose settlement is later refused (its lease
   * expired and another delivery terminated the run) cannot overwrite the
   * record of the settlement that committed. Store faults are retried
   * with backoff; the last one is rethrown.
   */
  async writeOutcomeRecord(runId: string, record: OutcomeRecord): Promise<void> {
    const key = runResultKey(this.prefix, runId, record.token);
    const bytes = encodeOutcomeRecord(record);
    await retryStore(() => this.store.put(key, bytes));
    // A wait in this process reads it next; kept only once stored.
    this.#outcomes.set(key, bytes);
  }
}
