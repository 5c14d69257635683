/**
 * @module The single-writer, ordered, transactional key-value engine whose
 * only durable home is an object store.
 *
 * CONTRACT (the queue and everything above depend on exactly this):
 * - Keys are strings ordered by the byte order of their UTF-8 encoding
 *   (`compareKeys`); values are bytes.
 * - Reads (`get`, `has`, `scan`) are synchronous over the in-memory state.
 * - `commit(batch)` applies the batch to the in-memory state synchronously,
 *   before it returns, so a transaction is: read synchronously, build a
 *   batch, commit, all inside one turn of the event loop. No locks needed.
 *   The returned promise resolves once the batch is durable (its WAL
 *   object and every earlier one are stored), and rejects with
 *   `FencedError` / `ClosedError` when it never will be. When checkpoints
 *   fell behind (`checkpointBacklog`), it resolves only once the running
 *   checkpoint published its manifest and paged out what it stored as
 *   well: writers that await their commits are slowed to the pace of
 *   checkpoints.
 * - Never mutate the engine while iterating a `scan`; collect first. Never
 *   mutate a value after committing it: the in-memory state keeps it.
 *
 * Durability: commits within `flushIntervalMs` share one WAL object (group
 * commit). Opening bumps the writer epoch in a new manifest and leaves a
 * fence marker in the WAL, so an older writer's next put fails and it shuts
 * down (`FencedError`). A WAL put that fails after its retries poisons the
 * engine: every pending and later commit rejects with a `ClosedError` whose
 * `cause` is the store failure. The in-memory state may then hold commits
 * that never became durable, so reads after poisoning are not to be trusted;
 * reopen to get exactly the durable state. Checkpoints (automatic, or
 * `checkpoint()`) write segments and delete the WAL they cover. Most are
 * incremental: they write only the keys changed since the previous one (a
 * new segment run, with tombstones), so their cost follows the change, not
 * the state size. A full checkpoint (compaction) rewrites the whole state
 * as one run and drops the others when the runs reach `maxSegmentRuns`,
 * when the newer runs together outgrow the oldest, when more than half the
 * state changed (the engine then stops recording changes), or after a
 * checkpoint failed. With `foldRunsByTier`, a checkpoint at
 * `maxSegmentRuns` folds the newest runs of similar size into its own
 * instead, and the runs reaching it no longer compact; the entries the runs
 * list reaching three times the live keys does (compaction-policy.ts).
 * Incremental checkpoints go on while a compaction writes, and its
 * manifest keeps the runs they published (docs/engine.md, "Incremental
 * checkpoints during a compaction"); once those reach `maxSegmentRuns`, the
 * next one folds the newest of them into its own run (run-fold.ts).
 *
 * Recovery = newest manifest + its segment runs (oldest first, newer runs
 * winning) + WAL replay from the sequence
 * it covers up to the first missing sequence (see recovery.ts). A gap a
 * crash cannot explain (an object deleted from the middle of the log), a
 * missing listed segment, or data no manifest explains fails open with
 * `StoreCorruptedError`, before anything is written. A WAL,
 * segment or manifest object that fails its checksum or cannot be decoded
 * fails open with `StoreCorruptedError` naming it; stores write objects
 * atomically, so a short object at the WAL tail is corruption too, never a
 * torn write to skip. Formats: wal-format.ts, segment-format.ts, manifest.ts.
 *
 * Memory: every key lives in memory, packed: recent writes in a memtable,
 * the rest front-coded in immutable key runs (layered-state.ts), so reads
 * stay synchronous. Values do too, unless `pageValues` is
 * set: then a value under its key prefixes, once a checkpoint stored it and
 * no commit changed it since, leaves memory and is read through a bounded
 * cache of decoded segment blocks, one ranged read per miss
 * (value-pager.ts). A synchronous read of such a value that is not cached
 * throws (`ValueNotWarmedError`): a transaction that may
 * read paged values first loops `for (let p = engine.warm(keys); p; p =
 * engine.warm(keys)) await p;` and then reads and commits in the same turn
 * (the cache keeps what a warm-up loaded until the next macrotask).
 * The values that stay are held packed, or from 64 B copied into the
 * writer's value arena (paged-value.ts `keepValue`), so reads of them
 * return fresh arrays or views of the engine's own copy. Without `pageValues`, values loaded at open are views into the objects
 * read, so those objects' buffers stay alive while any of their values does
 * (at most the bytes loaded at open). Each
 * writer open leaves one small fence object in the WAL that is never deleted
 * (see manifest.ts `fences`).
 *
 * The flush timer and retry backoff use real timers, not the SDK `Clock`:
 * they pace I/O and never decide anything a test needs to move.
 */
import { ConstructionGate } from "../internal-construction.js";
import { checkStoreArg } from "../store/store-check.js";
import { bytesEqual } from "../store/bytes-equal.js";
import { ClosedError, FencedError, StoreUnavailableError, TaqubaError, ValidationError } from "../errors.js";
import { describeValue } from "../option-values.js";
import type { ObjectStore } from "../store/object-store.js";
import { collectGarbage, publishManifest, writeSegments, type CheckpointWriter } from "./checkpoint.js";
import { waitInBackground } from "../clock.js";
import { resolveEngineOptions, type CommitOptions, type EngineOptions, type EngineStats, type ResolvedEngineOptions } from "./engine-options.js";
import type { HeadedKey } from "./key-family.js";
import { checkedKeyHeads, KeyHeads, MAX_KEY_HEADS } from "./key-heads.js";
import { segmentRuns, type Manifest, type SegmentRef } from "./manifest.js";
import { segmentKey } from "./layout.js";
import { recoverAsWriter, type Recovered } from "./open-writer.js";
import { probeConditionalCreate } from "./store-probe.js";
import { applyOps } from "./apply-ops.js";
import { CommittedPacks } from "./committed-packs.js";
import { readNewestManifest, type StoreContext } from "./recovery.js";
import type { ScanOptions } from "./scan.js";
import { orderChanges } from "./change-order.js";
import { ChangedKeys, ChangedKeysSpares } from "./changed-keys.js";
import { deltaOverflows, type DeltaMap } from "./sorted-map.js";
import { heldValue, isHeldBytes, isPageable, isPaged, keptInArena, KeptValue, packValue, ValueArena, type StateMap, type StoredValue } from "./paged-value.js";
import { ValuePager } from "./value-pager.js";
import { foldRuns } from "./run-fold.js";
import { planCheckpoint, tierFold, type CheckpointPlan, type RunSize } from "./compaction-policy.js";
import type { StateSnapshot } from "./layered-state.js";
import type { SegmentBlockInfo } from "./segment-format.js";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { checkBatchSize, EncodedKeys, readBatchOps, readOwnedOps } from "./wal-format.js";
import { WalWriter } from "./wal-writer.js";
import { reserveSegmentBlock, takeFromBlock, type SegmentBlock } from "./compaction-block.js";
import type { BatchOp, WriteBatch } from "./write-batch.js";
import { timeCommit } from "../telemetry/metrics.js";

export { scanTree, type ScanOptions } from "./scan.js";
export type { CommitOptions, EngineOptions, EngineStats, PageValuesOptions } from "./engine-options.js";

declare const VALUE_TOKEN: unique symbol;
/** What `Engine.valueToken` returns: compared with `===` only, never read. */
export type ValueToken = { readonly [VALUE_TOKEN]: true };

const RESOLVED = Promise.resolve();
const noop = (): void => {};

/** `new Engine` is internal: use Engine.open(store, options) (see internal-construction.ts). */
const ENGINE_GATE = new ConstructionGate("Engine", "use Engine.open(store, options)");

/** A compaction still writing; see `Engine.#compacting`. */
interface Compacting {
  /** The WAL sequence after its cut. */
  walNext: number;
  /** What the writer had sealed at its cut (see `Engine.#covered`). */
  cover: { objects: number; bytes: number };
  runs: Set<number>;
  block: SegmentBlock | undefined;
}

/** A running checkpoint: settles when it ended (published and paged out, or failed), with the `walNext` of its cut. */
interface RunningCheckpoint {
  readonly done: Promise<void>;
  readonly walNext: number;
}

/** A checkpoint as cut: the WAL it covers and what it writes. */
interface CheckpointCut {
  full: boolean;
  /** The compaction that was writing when this incremental checkpoint was cut, if any. */
  besideOf: Compacting | undefined;
  /** Cut while a compaction held its slot (writing, or deleting what it replaced): its run may be folded (see `Engine.#foldable`). */
  beside: boolean;
  /**
   * Beside a compaction: the newest runs published beside it that this
   * checkpoint folds into its own run (oldest first, with their segments),
   * which then replaces them (see `#foldDue`).
   */
  fold: { runs: number[]; segments: SegmentRef[][] } | undefined;
  cutSeq: number;
  walNext: number;
  /** What this writer had sealed at the cut (see `Engine.#covered`). */
  cover: { objects: number; bytes: number };
  /** An incremental checkpoint's changes. */
  changed: DeltaMap | undefined;
  /** A compaction's state at the cut. */
  snapshot: StateSnapshot | undefined;
  /** Store keys of the segments it took numbers for. */
  owned: string[];
}

/** What the publish of an incremental checkpoint updates beside a compaction (see `Engine.#besidePublished`). */
type BesideCut = Pick<CheckpointCut, "besideOf" | "beside" | "fold">;

/** A checkpoint whose manifest put failed but may have landed; see `Engine.#unsure`. */
interface UnsurePublish extends BesideCut {
  /** Its manifest's number. */
  id: number;
  /** The WAL it would have covered. */
  cover: CheckpointCut["cover"];
  compaction: boolean;
  /** The block indexes of the segments it wrote. */
  indexes: readonly [string, readonly SegmentBlockInfo[]][];
  /** Their store keys, kept from garbage collection until the next publish has looked. */
  segments: readonly string[];
}

/** Set by `Engine`'s static block: its private owned-ops commit. */
let commitOwnedOps: (engine: Engine, ops: BatchOp[], given: readonly number[], opts: CommitOptions) => Promise<void>;
/** Set by `Engine`'s static block: its private owned-ops apply. */
let applyOwnedOps: (engine: Engine, ops: BatchOp[], given: readonly number[]) => unknown;

/**
 * @internal `engine.commit` of ops its caller made with `WriteBatch` and
 * holds where no one else can reach them (the queue's transaction), without
 * the copy of each op `commit` makes (`readOwnedOps`): every key is checked,
 * and the values at the indices in `given` (ascending; values from outside
 * the caller, which someone else may hold); every other value must be a
 * plain array the caller made. The caller must not change or hand out `ops`
 * or their objects until the call returns; it may read them after. Not
 * exported from the package: a caller's own ops go through `commit`.
 */
export function commitOwned(engine: Engine, ops: BatchOp[], given: readonly number[], opts: CommitOptions = {}): Promise<void> {
  return commitOwnedOps(engine, ops, given, opts);
}

/**
 * @internal `commitOwned` with `durable: false` for a caller that awaits
 * nothing: applies `ops` the same way and returns the refusal a commit
 * would reject with (undefined once applied), so no promise is made or
 * caught per commit. Not exported from the package.
 */
export function applyOwned(engine: Engine, ops: BatchOp[], given: readonly number[]): unknown {
  return applyOwnedOps(engine, ops, given);
}

/** A thrown value as a refusal: never undefined, which the apply methods return for "applied". */
function refusalOf(err: unknown): unknown {
  return err === undefined ? new ValidationError("the batch was refused with no reason given; nothing of it was applied") : err;
}

/**
 * The ordered, transactional key-value engine; see the module documentation
 * for its contract. One writer per store: opening fences the previous one.
 *
 * @example
 * const engine = await Engine.open(new MemoryStore());
 * await engine.commit(new WriteBatch().put("a/1", new Uint8Array([1])).delete("a/0"));
 * for (const [key, value] of engine.scan({ prefix: "a/" })) console.log(key, value);
 * await engine.close();
 */
export class Engine {
  /** The store this engine writes to. */
  readonly store: ObjectStore;
  readonly #ctx: StoreContext;
  readonly #opts: ResolvedEngineOptions;
  readonly #epoch: number;
  #state: StateMap;
  /** Reads of paged values; undefined without `pageValues` (every value stays in memory). */
  readonly #pager: ValuePager | undefined;
  /** Committed values waiting to be paged are copied here (see `ValueArena`); undefined without `pageValues`. */
  readonly #arena: ValueArena | undefined;
  /**
   * Changes since the manifest's `walNext`, for the next incremental
   * checkpoint; undefined when they are not all known (too many to be
   * worth it, or a checkpoint took them and failed): the next one is full.
   */
  #delta: DeltaMap | undefined;
  /** See `commits`. */
  #commits = 0;
  /** Where the WAL wrote the keys of the batch being committed: the delta copies them from there. */
  readonly #walKeys = new EncodedKeys();
  /** The strings the last commit packed its values into, for `committedToken` (see `CommittedPacks`). */
  readonly #packs = new CommittedPacks();
  /** The arrays of the last changed-keys map a checkpoint was done with, for the next cut's map. */
  readonly #changedSpares = new ChangedKeysSpares();
  #manifest: Manifest;
  #wal: WalWriter;
  #status: "open" | "closing" | "closed" = "open";
  #failure: TaqubaError | undefined;
  readonly #failureListeners = new Set<(failure: TaqubaError) => void>();
  #closing: Promise<void> | undefined;
  /** The running compaction (full checkpoint), if any. */
  #compactionRun: RunningCheckpoint | undefined;
  /** The running incremental checkpoint, if any: one may run while a compaction does (docs/engine.md, "Incremental checkpoints during a compaction"). */
  #incrementalRun: RunningCheckpoint | undefined;
  /** Running checkpoints that have not yet published and paged out: commits held by the backlog wait only for those. */
  #holding = 0;
  /**
   * The garbage collection of incremental checkpoints already published
   * (see `#collectAfter`), while it runs, and the newest manifest waiting
   * for its turn.
   */
  #collecting: Promise<void> | undefined;
  #toCollect: { writer: CheckpointWriter; current: Manifest; previous: Manifest } | undefined;
  /** The id of the newest manifest whose deletions ended. */
  #collectedId = 0;
  /** Callers of `checkpoint()` waiting for the deletions of manifest `id` (see `#collectedThrough`). */
  #collectWaits: { id: number; resolve: () => void }[] = [];
  /**
   * While a compaction runs: the changes between the cut of the manifest it
   * started from and its own cut, which no published run holds yet; the
   * first incremental checkpoint during the compaction writes them along
   * with its own. Undefined once taken (or with no compaction running).
   */
  #carry: DeltaMap | undefined;
  /** While a compaction runs: its carry is not known (the delta was not), so no incremental checkpoint may run beside it. */
  #carryLost = false;
  /** Manifests are published one at a time: two checkpoints would otherwise claim the same number. */
  #publishLock: Promise<void> = RESOLVED;
  /**
   * Segments of checkpoints that have not published (or whose manifest may
   * have landed, see `#unsure`): garbage collection leaves them alone.
   */
  readonly #ownedSegments = new Set<string>();
  #liveSegments: { manifest: Manifest; keys: Set<string> } | undefined;
  /**
   * While a compaction writes: the runs published by incremental checkpoints
   * cut after it (its manifest keeps those, and only those), and the
   * segment numbers it takes once one published: a block reserved past the
   * counter (see `COMPACTION_SEGMENT_BLOCK`; undefined: from the counter).
   */
  #compacting: Compacting | undefined;
  /**
   * Runs published by incremental checkpoints cut while a compaction held
   * its slot (writing, or deleting what it replaced), since the last
   * compaction's cut: the newest runs of the manifest, which a checkpoint
   * beside a compaction folds at `maxSegmentRuns` (see `#foldDue`). Only
   * then can runs pass `maxSegmentRuns`: otherwise a compaction is due.
   */
  #foldable = new Set<number>();
  #segmentCounter = 0;
  /** The first WAL sequence this writer puts at (past its fence marker). */
  readonly #firstSeq: number;
  /** The open replayed commits that no manifest of this writer covers yet. */
  #replayUncovered: boolean;
  /** WAL objects (and bytes) landed since open. */
  #landed = { objects: 0, bytes: 0 };
  /**
   * The WAL the newest manifest covers, on the same count: what this writer
   * had sealed at that checkpoint's cut, or minus the objects replayed at
   * open before any. The WAL since the last checkpoint is `#landed` minus this.
   */
  #covered = { objects: 0, bytes: 0 };
  /**
   * A checkpoint whose manifest put failed may have landed all the same
   * (see `#adoptLandedManifest`): its number, the WAL it would have
   * covered, whether it was a compaction, and its segments (kept from
   * garbage collection until the next publish has looked).
   */
  #unsure: UnsurePublish | undefined;
  #checkpoints = 0;
  #compactions = 0;
  #besideCompaction = 0;
  #folds = 0;
  #tierFolds = 0;
  #autoCheckpointPause = { until: 0, ms: 0 };
  /** The wait for the end of that pause, when one is armed (see `#lookAfterPause`). */
  #pauseLook: { at: number; stop: AbortController } | undefined;
  /** Commits acknowledged late (see `checkpointBacklog`) wait on this until a checkpoint publishes and pages out, or ends. */
  #backlogWait: { promise: Promise<void>; release(): void } | undefined;
  #backlogWaits = 0;
  #checkpointBytes = 0;
  readonly #closedController = new AbortController();

  private constructor(store: ObjectStore, opts: ResolvedEngineOptions, r: Recovered) {
    ENGINE_GATE.check();
    this.store = store;
    this.#ctx = r.ctx;
    this.#opts = opts;
    this.#epoch = r.manifest.epoch;
    this.#state = r.tree;
    const pv = opts.pageValues;
    this.#pager = pv === undefined ? undefined : new ValuePager(r.ctx, pv, pv.cacheBytes, r.manifest, pv.readaheadBytes);
    // The open read every segment's block index: the pager needs no read of its own for them.
    if (this.#pager !== undefined) for (const [name, blocks] of r.indexes) this.#pager.addIndex(name, blocks);
    this.#arena = pv === undefined ? undefined : new ValueArena();
    this.#delta = r.delta;
    this.#manifest = r.manifest;
    this.#covered = { objects: -r.walk.objects, bytes: -r.walk.bytes };
    this.#firstSeq = r.firstSeq;
    this.#replayUncovered = r.walk.replayed > 0;
    this.#wal = new WalWriter(
      store,
      r.ctx.prefix,
      this.#epoch,
      r.firstSeq,
      {
        flushIntervalMs: opts.flushIntervalMs,
        maxWalBytes: opts.maxWalBytes,
        maxInflight: opts.maxInflightWalPuts,
        retry: opts.retry,
        cohorts: opts.walCohorts,
      },
      (_seq, bytes) => this.#onLanded(bytes),
      (err) => this.#fail(err),
    );
  }

  /**
   * Opens `store` as its only writer: bumps the writer epoch in a new
   * manifest, recovers the newest manifest's segments plus the WAL up to its
   * first gap, and fences older writers. Fails with `FencedError` when
   * another writer opens the same store at the same moment, with
   * `UnsupportedFormatError` when a newer taquba wrote the store, with
   * `StoreCorruptedError` when objects are missing (a WAL object from the
   * middle of the log, a listed segment, the manifests) and with
   * `UnsupportedStoreError` when the store ignores create-if-absent; a
   * refused open writes no manifest, but for the claim of one that met a
   * checkpoint during its load and claimed first (it stays: another opener
   * may have read it). To look at a store without taking it over, use
   * `EngineReader`.
   */
  static async open(store: ObjectStore, opts: EngineOptions = {}): Promise<Engine> {
    checkStoreArg("Engine.open's store", store);
    const resolved = resolveEngineOptions(opts);
    const ctx: StoreContext = { store, prefix: resolved.prefix, retry: resolved.retry };
    // Temporary files of writers killed mid-put; failing to remove them costs only disk space.
    await store.removeLeftovers?.(resolved.prefix).catch((err: unknown) => resolved.onBackgroundError(err));
    await probeConditionalCreate(ctx);
    const r = await recoverAsWriter(ctx, resolved.pageValues, () => resolved.clock.now(), resolved.memtableKeys, resolved.keyHeads);
    const engine = ENGINE_GATE.build(() => new Engine(store, resolved, r));
    engine.#maybeCheckpoint();
    return engine;
  }

  /** True once closed, fenced or poisoned; commits then reject. */
  get closed(): boolean {
    return this.#status !== "open" || this.#failure !== undefined;
  }

  /**
   * @internal Aborted when the engine stops accepting commits: `close()`
   * began, a newer writer fenced it, or a failed WAL write poisoned it. Its
   * `reason` is the `ClosedError` (or `FencedError`) that later commits get,
   * so waiters above can settle with the same cause.
   */
  get closedSignal(): AbortSignal {
    return this.#closedController.signal;
  }

  /**
   * Why the engine stopped accepting commits on its own: a `FencedError`
   * (a newer writer opened the store) or a `ClosedError` whose cause is the
   * failed store write. Undefined while open and after a plain `close()`.
   */
  get failure(): TaqubaError | undefined {
    return this.#failure;
  }

  /** Calls `listener` once when the engine is fenced or poisoned; returns the unsubscribe function. */
  onFailure(listener: (failure: TaqubaError) => void): () => void {
    this.#failureListeners.add(listener);
    return () => this.#failureListeners.delete(listener);
  }

  /**
   * @internal Batches applied to the state since open, counted in the turn
   * each is applied (a refused one is not counted). A reader that noted the
   * count knows, while it is unchanged, that no commit changed any value
   * since; a layer above that counts its own commits tells others' apart.
   * Not durable: it starts at zero on each open.
   */
  get commits(): number {
    return this.#commits;
  }

  /** This writer's epoch (one more than the writer before it). */
  get epoch(): number {
    return this.#epoch;
  }

  /** Counters since open, for benchmarks and operators. */
  get stats(): EngineStats {
    const c = this.#state.counters;
    return {
      epoch: this.#epoch,
      walPuts: this.#wal.stats.objects,
      walBytes: this.#wal.stats.bytes,
      walBatches: this.#wal.stats.batches,
      durableSeq: this.#wal.durableSeq,
      checkpoints: this.#checkpoints,
      compactions: this.#compactions,
      checkpointsBesideCompaction: this.#besideCompaction,
      runsFoldedBesideCompaction: this.#folds,
      runsFoldedByTier: this.#tierFolds,
      checkpointBytes: this.#checkpointBytes,
      manifestId: this.#manifest.id,
      segmentRuns: segmentRuns(this.#manifest).length,
      cacheHits: this.#pager?.cache.hits ?? 0,
      cacheMisses: this.#pager?.cache.misses ?? 0,
      cacheBytes: this.#pager?.cache.stats.bytes ?? 0,
      segmentFetches: this.#pager?.fetches ?? 0,
      walObjectsSinceCheckpoint: this.#sinceCheckpoint().objects,
      walBytesSinceCheckpoint: this.#sinceCheckpoint().bytes,
      backlogWaits: this.#backlogWaits,
      keyRuns: this.#state.runCount,
      memtableFreezes: c.freezes,
      memtableKeys: this.#state.memtableTarget,
      memtableGrows: c.grows,
      memtableShrinks: c.shrinks,
      runMerges: c.merges + c.rewrites,
      runCatchUps: c.catchUps,
      mergedEntries: c.mergedEntries,
      takeBacks: c.takeBacks,
      takenBack: c.takenBack,
      takeBackDroppedMerges: c.droppedMerges,
    };
  }

  /**
   * The committed value of `key` (durable or not yet), or undefined. Do not
   * mutate it. Throws `ValueNotWarmedError` for a paged value not warmed first.
   */
  get(key: string): Uint8Array | undefined {
    const v = this.#state.get(key);
    if (v === undefined || v instanceof Uint8Array) return v;
    return isPaged(v) ? this.#pager!.read(key, v) : heldValue(key, v);
  }

  /** @internal `get` of a key its family made (key-family.ts): the memtable finds its tree without a search. */
  getHeaded(key: HeadedKey): Uint8Array | undefined {
    const k = key.key;
    const v = this.#state.get(k, key);
    if (v === undefined || v instanceof Uint8Array) return v;
    return isPaged(v) ? this.#pager!.read(k, v) : heldValue(k, v);
  }

  /**
   * @internal True when a commit keeps none of the value arrays it is given:
   * with `pageValues`, each value is packed into a string, or copied (see
   * `applyOps`), as the WAL copies it. A caller may then commit views of
   * memory it shares between values; otherwise the state holds each array
   * as committed, and a view would keep all the memory it shares alive.
   */
  get copiesValues(): boolean {
    return this.#pager !== undefined;
  }

  /**
   * A token for the value `key` holds now; undefined when it has none or it
   * is paged out. Equal tokens (`===`) of one key mean equal bytes: the state
   * holds a value as committed, or packed into a string of its bytes (see
   * `packValue`), and never changes it in place. Unequal tokens say nothing
   * (a value may be repacked). A caller that decoded the value it read checks
   * the token again instead of reading, copying and comparing the bytes.
   */
  valueToken(key: string): ValueToken | undefined {
    const v = this.#state.get(key);
    return v === undefined || isPaged(v) ? undefined : (v as unknown as ValueToken);
  }

  /** @internal `valueToken` of a key its family made (key-family.ts): the memtable finds its tree without a search. */
  valueTokenHeaded(key: HeadedKey): ValueToken | undefined {
    const v = this.#state.get(key.key, key);
    return v === undefined || isPaged(v) ? undefined : (v as unknown as ValueToken);
  }

  /**
   * @internal The token `valueToken(key)` gives while `key` holds the value
   * a commit put as `value` (see `applyOps`), made without looking the key
   * up: `value` itself where the state holds values as committed (the
   * queue's `commitOwned` keeps its arrays; `commit` may keep a copy of a
   * caller's), else the string it is packed into, or the place of one
   * kept in its arena once the commit is applied (found by a look-up);
   * undefined where the engine holds a copy paging may move out, or one
   * too large to pack. Like any token, one equal to the key's
   * means equal bytes, and an unequal one says nothing. A caller that has
   * just committed `value` takes this instead of reading its key back; it
   * must not change `value` once committed (the string the last commit
   * packed it into is handed out as it is: see `CommittedPacks`).
   */
  committedToken(key: string, value: Uint8Array): ValueToken | undefined {
    const policy = this.#pager?.policy;
    if (policy === undefined) return value as unknown as ValueToken;
    if (isPageable(policy, key, value)) return undefined;
    if (keptInArena(value.byteLength)) return this.#keptToken(key, value);
    // The string the state holds when the last commit put this array there: not packed a second time.
    const noted = this.#packs.find(key, value);
    if (noted !== undefined) return noted as unknown as ValueToken;
    const packed = packValue(key, value);
    return packed instanceof Uint8Array ? undefined : (packed as unknown as ValueToken);
  }

  /**
   * The token of the value `key` holds in the arena when it is `value`'s
   * bytes: a kept value's token is its place in the arena, made when the
   * commit was applied, so it is looked up (one get and a compare, against
   * the decode of a read the caller saves). Undefined before the commit is
   * applied, or once the key holds other bytes.
   */
  #keptToken(key: string, value: Uint8Array): ValueToken | undefined {
    const held = this.#state.get(key);
    return held instanceof KeptValue && bytesEqual(held.bytes(), value) ? (held as unknown as ValueToken) : undefined;
  }

  /**
   * Makes the values of `keys` readable synchronously: undefined when they
   * already are (always without `pageValues`), else a promise that resolves
   * once the segment blocks holding them are cached. Loop until it returns
   * undefined, then read and commit without awaiting in between.
   */
  warm(keys: Iterable<string>): Promise<void> | undefined {
    const pager = this.#pager;
    if (pager === undefined) return undefined;
    // Read twice (the check allocates nothing when every value is readable): a one-shot iterable is listed first.
    const list = Array.isArray(keys) ? (keys as readonly string[]) : [...keys];
    let cold = false;
    for (const key of list) {
      const v = this.#state.get(key);
      if (v !== undefined && isPaged(v) && !pager.isCached(key, v)) {
        cold = true;
        break;
      }
    }
    if (!cold) return undefined;
    // The warm-up pins the blocks of the cached values too: left unpinned, a trim while the cold ones load
    // could evict them, and a loop over more values than the cache holds would never see them all at once.
    const paged: [string, number][] = [];
    for (const key of list) {
      const v = this.#state.get(key);
      if (v !== undefined && isPaged(v)) paged.push([key, v]);
    }
    return pager.warm(paged);
  }

  /** The key prefixes the memtable gives trees of their own now (`keyHeads` and `declareKeyHeads`), ascending. */
  get keyHeads(): readonly string[] {
    return this.#state.keyHeads.prefixes;
  }

  /**
   * Declares key prefixes the caller uses heavily, as `EngineOptions.keyHeads`
   * does at open, for a caller handed an open engine (checked as the option
   * is). They join the heads declared so far: declaring a prefix again, or in
   * another order, changes nothing, and the set never shrinks. The memtable
   * is built again with them at once; a frozen one keeps its own until its
   * run is made. Nothing stored changes: an engine opened later without the
   * declaration reads the same. Throws `ValidationError`, changing nothing,
   * for a bad list or when the set would pass `MAX_KEY_HEADS` prefixes, and
   * `ClosedError` (or the failure) once the engine is closed, fenced or
   * poisoned. Do not call it while iterating a scan.
   */
  declareKeyHeads(prefixes: readonly string[]): void {
    if (this.#failure) throw this.#failure;
    if (this.#status !== "open") throw new ClosedError("the engine");
    const declared = checkedKeyHeads(prefixes, "declareKeyHeads' prefixes");
    const current = this.#state.keyHeads;
    const merged = current.union(declared);
    if (merged === current.prefixes) return;
    if (merged.length > MAX_KEY_HEADS) {
      throw new ValidationError(
        `the engine gives its memtable at most ${MAX_KEY_HEADS} key heads: ${current.prefixes.length} are declared (keyHeads at open and earlier declarations), ` +
          `and these prefixes add ${merged.length - current.prefixes.length} more; nothing changed`,
      );
    }
    this.#state.setKeyHeads(KeyHeads.of(merged));
  }

  /** Whether `key` has a committed value. */
  has(key: string): boolean {
    return this.#state.has(key);
  }

  /** Committed keys in order (or reversed) within the bounds of `opts`, no value read (none needs loading). Do not commit while iterating. */
  *keys(opts: ScanOptions = {}): IterableIterator<string> {
    for (const entry of this.#state.scan(opts)) yield entry[0];
  }

  /** Committed entries in key order (or reversed), within the bounds of `opts`. Do not commit while iterating. */
  *scan(opts: ScanOptions = {}): IterableIterator<[string, Uint8Array]> {
    const pager = this.#pager;
    for (const entry of this.#state.scan(opts)) {
      const v = entry[1];
      // Without paging, values are held as bytes, or as strings of their bytes once taken back from a run.
      if (v instanceof Uint8Array) yield entry as [string, Uint8Array];
      else yield [entry[0], isPaged(v) ? pager!.read(entry[0], v) : heldValue(entry[0], v)];
    }
  }

  /**
   * Applies `batch` to the in-memory state now, atomically, and resolves once
   * it is durable (and, when the WAL since the last checkpoint reached the
   * `checkpointBacklog` bound, once the running checkpoint published). A rejected
   * batch (closed engine, invalid op) changes nothing. An empty batch
   * resolves when every earlier commit is durable.
   */
  commit(batch: WriteBatch, opts: CommitOptions = {}): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#status !== "open") return Promise.reject(new ClosedError("the engine"));
    // A bad argument rejects, as every refusal of a commit does, rather than throwing at the call.
    const given = (batch as WriteBatch | undefined)?.ops;
    if (!Array.isArray(given)) return Promise.reject(new ValidationError(`commit takes a WriteBatch, got ${describeValue(batch)}`));
    if (given.length === 0) return this.#acknowledge(opts);
    // The WAL and memory both take the ops as read once here, never the caller's objects again.
    let ops: BatchOp[];
    try {
      ops = readBatchOps(given);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#commitRead(ops, opts);
  }

  static {
    commitOwnedOps = (engine, ops, given, opts) => engine.#commitOwned(ops, given, opts);
    applyOwnedOps = (engine, ops, given) => engine.#applyOwned(ops, given);
  }

  /** See `commitOwned`. */
  #commitOwned(ops: BatchOp[], given: readonly number[], opts: CommitOptions): Promise<void> {
    const refused = this.#applyOwned(ops, given);
    return refused === undefined ? this.#acknowledge(opts) : Promise.reject(refused);
  }

  /** See `applyOwned`: the refusal, or undefined once applied. */
  #applyOwned(ops: BatchOp[], given: readonly number[]): unknown {
    if (this.#failure) return this.#failure;
    if (this.#status !== "open") return new ClosedError("the engine");
    if (ops.length === 0) return undefined;
    try {
      readOwnedOps(ops, given);
    } catch (err) {
      return refusalOf(err);
    }
    return this.#applyRead(ops);
  }

  /** Commits ops read once (`readBatchOps`, `readOwnedOps`): the WAL and memory both take these objects, which nobody else changes. */
  #commitRead(ops: readonly BatchOp[], opts: CommitOptions): Promise<void> {
    const refused = this.#applyRead(ops);
    return refused === undefined ? this.#acknowledge(opts) : Promise.reject(refused);
  }

  /** Applies ops read once to the WAL and memory; the refusal, or undefined once applied. */
  #applyRead(ops: readonly BatchOp[]): unknown {
    try {
      const room = checkBatchSize(ops);
      // Whole or not at all (see `WalBuilder.add`): a batch it cannot encode leaves the WAL and memory as they were.
      this.#wal.append(ops, room, this.#walKeys);
    } catch (err) {
      return refusalOf(err);
    }
    // A delta the batch could take past what its offsets hold stops recording first (as `deltaOverflows` does).
    if (this.#delta !== undefined && !this.#delta.hasRoomFor(ops)) this.#delta = undefined;
    const delta = this.#delta;
    try {
      const policy = this.#pager?.policy;
      const packs = this.#packs;
      packs.clear();
      applyOps(this.#state, ops, delta, policy, this.#arena, this.#walKeys, policy === undefined ? undefined : packs);
      this.#walKeys.release();
    } catch (err) {
      this.#walKeys.release();
      // The WAL took the batch whole and memory only part of it (an allocation failed): a state no reopen
      // gives. The engine stops here; a reopen gives the durable state, with this batch whole or not at all.
      this.#fail(err);
      return this.#failure;
    }
    this.#commits++;
    if (delta !== undefined && deltaOverflows(delta, this.#state.size)) this.#delta = undefined;
    return undefined;
  }

  /** The promise a commit returns once applied: resolved at once when not durable, else when durable (and the backlog allows). */
  #acknowledge(opts: CommitOptions): Promise<void> {
    if (opts?.durable === false) return RESOLVED;
    const durable = timeCommit(this.#wal.waitAppended());
    // Checkpoints fell behind: the commit is stored as usual, only its acknowledgement waits.
    return this.#backlogged() ? durable.then(() => this.#whenCheckpointsCaughtUp()) : durable;
  }

  /** Whether the WAL since the last checkpoint reached `checkpointBacklog` times a checkpoint trigger. */
  #backlogged(): boolean {
    const factor = this.#opts.checkpointBacklog;
    return factor !== 0 && this.#walSinceCheckpointReaches(factor);
  }

  /** Whether the WAL since the last checkpoint (or since `cover`) reached `factor` times a checkpoint trigger (objects or bytes, each when on). */
  #walSinceCheckpointReaches(factor: number, cover = this.#covered): boolean {
    // Asked on every durable commit (the backlog): read as numbers, with no object made.
    const opts = this.#opts;
    const landed = this.#landed;
    const maxObjects = opts.checkpointWalObjects;
    const maxBytes = opts.checkpointWalBytes;
    return (maxObjects > 0 && landed.objects - cover.objects >= maxObjects * factor) || (maxBytes > 0 && landed.bytes - cover.bytes >= maxBytes * factor);
  }

  /**
   * Resolves at once when the backlog is under its bound (or the engine
   * stopped), else when a checkpoint publishes and pages out (before it
   * deletes what it replaced) or ends: a durable commit's outcome is
   * settled, so waiting only paces the caller and never turns into an error.
   */
  #whenCheckpointsCaughtUp(): Promise<void> | undefined {
    if (this.#status !== "open" || this.#failure !== undefined || !this.#backlogged()) return undefined;
    // A checkpoint is due (the bound is at least the trigger): make sure one runs.
    this.#maybeCheckpoint();
    // None runs: automatic checkpoints pause after a failure, and a failing checkpoint never blocks commits.
    // One that only deletes what it replaced would hold commits for as long as the store takes (or forever).
    if (this.#holding === 0) return undefined;
    if (this.#backlogWait === undefined) {
      let release!: () => void;
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      this.#backlogWait = { promise, release };
    }
    this.#backlogWaits++;
    return this.#backlogWait.promise;
  }

  /** Lets the commits waiting for checkpoints go: all of them, or only once the backlog is under its bound. */
  #releaseBacklog(all: boolean): void {
    const wait = this.#backlogWait;
    if (wait === undefined || (!all && this.#backlogged())) return;
    this.#backlogWait = undefined;
    wait.release();
  }

  /**
   * After a checkpoint ended: the commits it held go once the backlog is
   * under its bound, and the next checkpoint starts if due. One that failed
   * or covered nothing new lets every waiting commit go, so none waits on a
   * checkpoint that may never come.
   */
  #afterCheckpoint(progressed: boolean): void {
    if (progressed) this.#autoCheckpointPause = { until: 0, ms: 0 };
    this.#releaseBacklog(!progressed);
    if (progressed) this.#maybeCheckpoint();
    // Nothing left that would end the wait.
    if (!this.#checkpointsRunning()) this.#releaseBacklog(true);
  }

  /** Resolves when every commit made so far is durable. */
  flush(): Promise<void> {
    // The WAL's own promise, not an async frame that only awaits it: a flush with everything durable makes none.
    if (this.#failure) return Promise.reject(this.#failure);
    try {
      return this.#wal.waitDurable(this.#wal.seal());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Writes segments and a manifest covering every commit made before the
   * call, then deletes the WAL objects it covers: the keys changed since the
   * previous checkpoint as a new run, or the whole state when a compaction
   * is due (see the module documentation). Commits continue meanwhile.
   * Resolves once such a manifest is published and its deletions ended: a
   * checkpoint already running whose cut covers the call counts, and
   * checkpoints cut after the one that covers it are not waited for (they
   * may still run when it resolves). Rejects when its own checkpoint fails.
   */
  async checkpoint(): Promise<void> {
    if (this.#failure) throw this.#failure;
    if (this.#status !== "open") throw new ClosedError("the engine");
    // Every commit made before the call is in a WAL object sealed now: a manifest whose `walNext` passes it covers them.
    const target = this.#wal.seal() + 1;
    while (this.#manifest.walNext < target) {
      if (this.#canStartCovering(target)) {
        // Its own checkpoint: its failure is the caller's.
        await this.#startCheckpoint();
        continue;
      }
      // One running may cover the call (any cut after it does): wait for the next to end, never for all of them,
      // since automatic checkpoints under a steady stream of commits start one after another.
      await Promise.race([this.#compactionRun, this.#incrementalRun].filter((r) => r !== undefined).map((r) => r.done.then(noop, noop)));
      if (this.#failure) throw this.#failure;
      if (this.closed) throw new ClosedError("the engine");
    }
    const covering = this.#manifest;
    // The checkpoint that published it pages out and queues its deletions before it ends: wait for those cut
    // before that publish (one cut since covers WAL past it, and is not the caller's).
    const cutBefore = [this.#compactionRun, this.#incrementalRun].filter((r): r is RunningCheckpoint => r !== undefined && r.walNext <= covering.walNext);
    await Promise.allSettled(cutBefore.map((r) => r.done));
    // Its deletions run after it (see `#collectAfter`): the caller is told once they ended too.
    await this.#collectedThrough(covering.id);
  }

  /**
   * Whether `checkpoint()` may start one now that covers WAL below `target`:
   * none incremental runs, and no compaction does, or one does whose cut is
   * below `target` and beside which an incremental checkpoint may run
   * (its cut is then past the compaction's, so it covers something).
   */
  #canStartCovering(target: number): boolean {
    if (this.#incrementalRun !== undefined) return false;
    if (this.#compactionRun === undefined) return true;
    const compacting = this.#compacting;
    return this.#canCheckpointBeside() && (compacting === undefined || compacting.walNext < target);
  }

  /** Resolves once the deletions of manifest `id` (or of a later one, which delete all it would) ended, or none are queued. */
  #collectedThrough(id: number): Promise<void> {
    if (this.#collecting === undefined || this.#collectedId >= id) return RESOLVED;
    return new Promise<void>((resolve) => this.#collectWaits.push({ id, resolve }));
  }

  /**
   * Waits for pending commits to become durable and stops. Later commits
   * reject with `ClosedError`. Closing a fenced or poisoned engine resolves.
   */
  close(): Promise<void> {
    this.#closing ??= this.#doClose();
    return this.#closing;
  }

  async #doClose(): Promise<void> {
    // Refuse new commits first, so none can land in an object never sealed.
    this.#status = "closing";
    if (!this.#closedController.signal.aborted) this.#closedController.abort(this.#failure ?? new ClosedError("the engine"));
    this.#stopBacklog();
    if (!this.#failure) {
      try {
        await this.#wal.waitDurable(this.#wal.seal());
      } catch {
        // The failure already rejected every pending commit.
      }
    }
    this.#wal.stopTimers();
    await this.#checkpointsEnded();
    // Reads still work; nothing is written any more, so the merges need not end.
    this.#state.stopIdleMerges();
    this.#status = "closed";
  }

  /** Stopped (closed, fenced, poisoned): no checkpoint will come, so nothing waits for one. */
  #stopBacklog(): void {
    this.#releaseBacklog(true);
  }

  #fail(err: unknown): void {
    if (this.#failure) return;
    const failure = err instanceof FencedError ? err : new ClosedError("the engine", err);
    this.#failure = failure;
    this.#wal.fail(failure);
    if (!this.#closedController.signal.aborted) this.#closedController.abort(failure);
    this.#stopBacklog();
    for (const l of this.#failureListeners) {
      try {
        l(failure);
      } catch {
        // A listener's own failure must not stop the others from hearing of this one.
      }
    }
    this.#failureListeners.clear();
  }

  /** The clock's time; a clock that fails to read (checked at open, so it broke since) is reported and ends any pause. */
  #now(): number {
    try {
      return this.#opts.clock.now();
    } catch (err) {
      this.#opts.onBackgroundError(err);
      return Number.POSITIVE_INFINITY;
    }
  }

  /** When a manifest is published, by the engine's clock (as an open's claim is); a clock that broke since the open falls back to the system's, a manifest needing a finite time. */
  #manifestTime(): number {
    const now = this.#now();
    return Number.isFinite(now) ? now : Date.now();
  }

  /** The WAL landed since the last checkpoint's cut (what a reopen now would replay, besides objects in flight). */
  #sinceCheckpoint(): { objects: number; bytes: number } {
    return { objects: this.#landed.objects - this.#covered.objects, bytes: this.#landed.bytes - this.#covered.bytes };
  }

  #onLanded(bytes: number): void {
    this.#landed.objects++;
    this.#landed.bytes += bytes;
    this.#maybeCheckpoint();
  }

  #checkpointsRunning(): boolean {
    return this.#compactionRun !== undefined || this.#incrementalRun !== undefined;
  }

  /** Resolves once no checkpoint runs (failed ones included) and no garbage collection of one does. */
  async #checkpointsEnded(): Promise<void> {
    while (this.#checkpointsRunning() || this.#collecting !== undefined)
      await Promise.allSettled([this.#compactionRun?.done, this.#incrementalRun?.done, this.#collecting]);
  }

  /** Whether an incremental checkpoint may start beside the running compaction: the changes since the newest manifest are known. */
  #canCheckpointBeside(): boolean {
    return this.#delta !== undefined && !this.#carryLost;
  }

  #maybeCheckpoint(): void {
    if (this.#incrementalRun !== undefined || this.closed) return;
    if (this.#compactionRun !== undefined && !this.#canCheckpointBeside()) return;
    if (!this.#walSinceCheckpointReaches(1)) return;
    if (this.#pausedAfterFailure()) {
      // No write may land once the pause ends (an idle writer, the last commits of a burst): look again then.
      this.#lookAfterPause();
      return;
    }
    // Beside a compaction still writing, from half a trigger of WAL past its cut: the WAL no manifest covers
    // then stays under one and a half triggers, and a short compaction ends before any run is added beside it.
    // At once when commits already wait on the backlog: a compaction cut past one and a half triggers (a long
    // WAL tail replayed at open, checkpoints paused after failures) would otherwise hold them until it ends,
    // since callers waiting on their acknowledgements add little WAL toward the half trigger.
    const compacting = this.#compacting;
    if (this.#compactionRun !== undefined && compacting !== undefined && !this.#walSinceCheckpointReaches(0.5, compacting.cover) && !this.#backlogged()) return;
    this.#startCheckpoint().then(
      () => {
        this.#autoCheckpointPause = { until: 0, ms: 0 };
      },
      (err: unknown) => {
        if (this.closed) return;
        // Back off, so a store that keeps failing is not hit on every WAL put. A checkpoint that ran beside
        // one whose failure began the pause fails in the same episode: the pause neither doubles nor moves.
        const now = this.#now();
        if (now >= this.#autoCheckpointPause.until) {
          const ms = Math.min(60_000, Math.max(1000, this.#autoCheckpointPause.ms * 2));
          this.#autoCheckpointPause = { until: Number.isFinite(now) ? now + ms : 0, ms };
        }
        this.#opts.onBackgroundError(err);
        // The WAL it did not cover is still due: looked at again when the pause ends, not only at the next write.
        // (A clock that broke sets no end: writes look again, as before.)
        if (this.#autoCheckpointPause.until > 0) this.#lookAfterPause();
      },
    );
  }

  /**
   * Looks for a due checkpoint again when the pause after a failed one ends
   * (by the engine's clock, on a timer that does not hold the process). One
   * wait at a time: a later end (the pause grew) is waited for when the
   * earlier one finds it still paused; an earlier one (the clock was set
   * back) replaces it. Ends with the engine.
   */
  #lookAfterPause(): void {
    const at = this.#autoCheckpointPause.until;
    const armed = this.#pauseLook;
    if (armed !== undefined && armed.at <= at) return;
    armed?.stop.abort();
    const stop = new AbortController();
    this.#pauseLook = { at, stop };
    waitInBackground(this.#opts.clock, at, AbortSignal.any([stop.signal, this.#closedController.signal])).then(
      () => {
        if (this.#pauseLook?.stop !== stop) return;
        this.#pauseLook = undefined;
        this.#maybeCheckpoint();
      },
      () => {
        // Replaced by an earlier look, or the engine stopped.
        if (this.#pauseLook?.stop === stop) this.#pauseLook = undefined;
      },
    );
  }

  /**
   * Whether automatic checkpoints still pause after a failure. A clock set
   * back since the pause began (a resumed VM, a stepped system clock) would
   * stretch it by the jump: it counts again from the new time instead.
   */
  #pausedAfterFailure(): boolean {
    const pause = this.#autoCheckpointPause;
    const now = this.#now();
    if (now >= pause.until) return false;
    if (now < pause.until - pause.ms) this.#autoCheckpointPause = { until: now + pause.ms, ms: pause.ms };
    return true;
  }

  /**
   * Cuts the WAL and starts a checkpoint: a compaction or an incremental one
   * as due when none runs, an incremental one beside a running compaction.
   */
  #startCheckpoint(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#status !== "open") return Promise.reject(new ClosedError("the engine"));
    const cut = this.#cut();
    if (cut === undefined) {
      // Nothing new to cover: no commit waits on this one.
      if (!this.#checkpointsRunning()) this.#releaseBacklog(true);
      return RESOLVED;
    }
    const covered = this.#covered;
    const run = this.#runCheckpoint(cut).finally(() => {
      if (cut.full && this.#compactionRun === running) this.#compactionRun = undefined;
      if (!cut.full && this.#incrementalRun === running) this.#incrementalRun = undefined;
    });
    // Its cut travels with it: `checkpoint()` waits only for the runs cut at or below the manifest that covers it.
    const running: RunningCheckpoint = { done: run, walNext: cut.walNext };
    if (cut.full) this.#compactionRun = running;
    else this.#incrementalRun = running;
    run.then(
      () => this.#afterCheckpoint(this.#covered !== covered),
      () => this.#afterCheckpoint(false),
    );
    return run;
  }

  /** The cut of a new checkpoint: seals the WAL, takes the changes it will write (or a snapshot), or undefined when nothing is new. */
  #cut(): CheckpointCut | undefined {
    const beside = this.#compactionRun !== undefined;
    if (beside && !this.#canCheckpointBeside()) throw new Error("an incremental checkpoint was started beside a compaction without the changes it needs");
    const cutSeq = this.#wal.seal();
    // Everything sealed so far is at or below the cut: what this checkpoint covers, once published.
    const cover = { objects: this.#wal.stats.objects, bytes: this.#wal.stats.bytes };
    const walNext = cutSeq + 1;
    const prev = this.#manifest;
    if (walNext === prev.walNext) return undefined;
    // Beside a compaction, only past its cut: a run that covers no WAL past it could be left unlisted (stopped,
    // failed, a crash) above the compaction's `lastSegment` with no WAL past that manifest, which recovery
    // takes for the segments of a deleted manifest (see `findUnexplained`). Nothing was sealed since then.
    if (beside && this.#compacting !== undefined && walNext <= this.#compacting.walNext) return undefined;
    // Only fence markers since the manifest (no commit replayed at open, none
    // made since): the state is the manifest's, so no segment is written. A
    // segment written then could outlive a crash next to a WAL that holds
    // no commit, which recovery would take for a deleted manifest's.
    const commitsCovered = this.#replayUncovered || cutSeq >= this.#firstSeq;
    // The cut: commits from here on land in later WAL objects and a new delta.
    let changed: DeltaMap | undefined = commitsCovered ? this.#delta : new ChangedKeys();
    // Room for as many changes as the last interval made (see `ChangedKeys`).
    const last = this.#delta;
    this.#delta = new ChangedKeys(undefined, last === undefined ? undefined : { keys: last.size, keyBytes: last.keyBytes }, this.#changedSpares);
    if (beside) {
      // The first run published during a compaction holds the changes since the manifest the compaction started
      // from as well: the manifest it publishes lists that one's runs, which stop at its cut.
      if (this.#carry !== undefined) {
        this.#carry.mergeLater(changed!);
        // Merged: nothing else holds it (the engine's delta is the new map).
        changed!.retire(this.#changedSpares);
        changed = this.#carry;
        this.#carry = undefined;
      }
      // Only when commits are covered: a run written for fence markers alone could outlive a crash as a deleted manifest's.
      const fold = commitsCovered ? this.#foldDue(prev, changed!.changes) : undefined;
      return { full: false, besideOf: this.#compacting, beside, fold, cutSeq, walNext, cover, changed, snapshot: undefined, owned: [] };
    }
    // Only when commits are covered: a run written for fence markers alone could outlive a crash as a deleted manifest's.
    const plan: CheckpointPlan = !commitsCovered ? { kind: "add" } : changed === undefined ? { kind: "full" } : this.#plan(prev, changed.changes);
    const full = plan.kind === "full";
    if (!full) {
      const fold = plan.kind === "fold" ? foldOf(segmentRuns(prev), plan.fold) : undefined;
      return { full, besideOf: undefined, beside, fold, cutSeq, walNext, cover, changed, snapshot: undefined, owned: [] };
    }
    // Kept for an incremental checkpoint beside this compaction (none may run when they are not known).
    this.#carry = changed;
    this.#carryLost = changed === undefined;
    this.#compacting = { walNext, cover, runs: new Set(), block: undefined };
    // Every run published since the last compaction's cut is one this compaction replaces.
    this.#foldable = new Set();
    return { full, besideOf: undefined, beside, fold: undefined, cutSeq, walNext, cover, changed: undefined, snapshot: this.#state.snapshot(), owned: [] };
  }

  /** A fresh segment number for checkpoint `cut`; the segment's name stays kept from garbage collection until it publishes or fails. */
  #takeSegmentNumber(cut: CheckpointCut): number {
    let n: number;
    const block = cut.full ? this.#compacting?.block : undefined;
    if (block === undefined) n = ++this.#segmentCounter;
    else n = takeFromBlock(block, this.#opts.maxSegmentBytes);
    const key = segmentKey(this.#ctx.prefix, this.#epoch, n);
    cut.owned.push(key);
    this.#ownedSegments.add(key);
    return n;
  }

  async #runCheckpoint(cut: CheckpointCut): Promise<void> {
    let holding = true;
    this.#holding++;
    const letGo = () => {
      if (holding) this.#holding--;
      holding = false;
    };
    const writer: CheckpointWriter = {
      ...this.#ctx,
      epoch: this.#epoch,
      maxSegmentBytes: this.#opts.maxSegmentBytes,
      blockBytes: this.#opts.segmentBlockBytes,
      nextSegmentNumber: () => this.#takeSegmentNumber(cut),
      stopped: () => this.closed,
    };
    let published = false;
    try {
      await this.#wal.waitDurable(cut.cutSeq);
      const stoppedError = () => new ClosedError("the engine (the checkpoint stopped before publishing)");
      let entries: Iterable<[string, StoredValue | null]> | AsyncIterable<[string, StoredValue | null]> = cut.snapshot
        ? cut.snapshot.entries()
        : await orderChanges(cut.changed!, writer.stopped, stoppedError);
      // Folding runs beside a compaction: read them back, newest first, under this checkpoint's own changes
      // (a paging writer holds their block indexes: no tail read each).
      const pager = this.#pager;
      if (cut.fold !== undefined)
        entries = foldRuns(
          this.#ctx,
          entries,
          [...cut.fold.segments].reverse(),
          writer.stopped,
          pager === undefined ? undefined : (seg) => pager.heldIndex(seg),
        );
      const indexes: [string, readonly SegmentBlockInfo[]][] = [];
      // Runs are numbered when they publish (see `#publish`).
      // Its windows go back to the pager's spares once the segments are written (or the writing failed).
      const reader = this.#pager?.compactionReader();
      let written: SegmentRef[];
      try {
        written = await writeSegments(writer, entries, 0, reader?.read, (name, blocks) => indexes.push([name, blocks]));
      } finally {
        reader?.release();
      }
      if (this.closed) throw this.#failure ?? new ClosedError("the engine");
      const { next, previous, run } = await this.#publish(cut, written, indexes);
      published = true;
      // A compaction pages only what the memtable held at the cut: everything else was paged or packed before.
      if (
        this.#pager !== undefined &&
        !(await this.#pageOut(cut.snapshot !== undefined ? cut.snapshot.memtableEntries() : cut.changed!.entriesWhere(isHeldBytes), run))
      )
        return;
      // Written and paged out: nothing reads its changed keys again, and the next cut's map takes their arrays.
      cut.changed?.retire(this.#changedSpares);
      // Published and paged out: the WAL it covers no longer counts, and deleting what it replaced frees no
      // memory. Commits it held go now, not after those deletes (a slow store would hold them for no bound).
      letGo();
      this.#releaseBacklog(false);
      // The checkpoint is complete; what GC leaves behind the next one finds again. Meanwhile no commit
      // waits for it: it can lower the WAL no further. An incremental checkpoint's goes on after it, so
      // the next one can start meanwhile (see `#collectAfter`).
      if (cut.full) await this.#collect(writer, next, previous);
      else this.#collectAfter(writer, next, previous);
    } catch (err) {
      if (err instanceof FencedError) this.#fail(err);
      // A store call that close() stopped between attempts gives up with its last fault: the checkpoint
      // ended because the engine closed, not because the store stayed unavailable.
      if (this.closed && err instanceof StoreUnavailableError) throw this.#failure ?? new ClosedError("the engine", err.cause);
      throw err;
    } finally {
      letGo();
      if (!published) {
        // The changes this checkpoint took are not stored: no later one may build on them.
        this.#delta = undefined;
        if (cut.full) {
          this.#carry = undefined;
          this.#carryLost = false;
          this.#compacting = undefined;
        }
        // Its segments are garbage, unless its manifest may have landed (kept until the next publish looks).
        if (this.#unsure?.segments !== cut.owned) for (const key of cut.owned) this.#ownedSegments.delete(key);
      }
    }
  }

  /**
   * Deletes what `current` made obsolete. Segments the newest manifest
   * lists, or that a checkpoint still writing owns, stay (asked again before
   * each delete).
   */
  #collect(writer: CheckpointWriter, current: Manifest, previous: Manifest): Promise<void> {
    return collectGarbage(writer, current, previous, (key) => this.#ownedSegments.has(key) || this.#liveSegmentKeys().has(key)).then(
      () => {},
      (err: unknown) => {
        if (!this.closed) this.#opts.onBackgroundError(err);
      },
    );
  }

  /**
   * Collects the garbage of incremental checkpoint `current` after it ended
   * rather than as its last step: the next checkpoint can then start as
   * soon as the WAL reaches its trigger, instead of once the deletions of
   * the WAL objects this one covered (hundreds of them at the default
   * trigger, seconds on a busy disk) ended, while the WAL since the last
   * checkpoint, and the memtable's changes with it, grew past the trigger.
   * One collection runs at a time, in publish order; of those waiting only
   * the newest is kept, since it deletes all an older one would.
   */
  #collectAfter(writer: CheckpointWriter, current: Manifest, previous: Manifest): void {
    this.#toCollect = { writer, current, previous };
    if (this.#collecting === undefined) this.#collecting = this.#collectQueued();
  }

  async #collectQueued(): Promise<void> {
    try {
      for (let job = this.#toCollect; job !== undefined; job = this.#toCollect) {
        this.#toCollect = undefined;
        await this.#collect(job.writer, job.current, job.previous);
        this.#collectedId = Math.max(this.#collectedId, job.current.id);
        this.#releaseCollectWaits(false);
      }
    } finally {
      // In the same turn as the last look at `#toCollect`: a job queued later starts a new collection.
      this.#collecting = undefined;
      // Nothing queued: a manifest whose deletions a caller waits for was collected, or never will be.
      this.#releaseCollectWaits(true);
    }
  }

  /** Lets go the callers of `checkpoint()` whose manifest's deletions ended: all of them, when `all`. */
  #releaseCollectWaits(all: boolean): void {
    if (this.#collectWaits.length === 0) return;
    const waiting: { id: number; resolve: () => void }[] = [];
    for (const w of this.#collectWaits) {
      if (all || w.id <= this.#collectedId) w.resolve();
      else waiting.push(w);
    }
    this.#collectWaits = waiting;
  }

  /**
   * Publishes the manifest of checkpoint `cut`, built on the newest one
   * published (one publish at a time): an incremental run is added to the
   * newest manifest's runs; a compaction's run replaces every run up to the
   * manifest it started from and keeps those published since (its run then
   * takes that manifest's id, so it orders before them). Updates the
   * writer's view synchronously once the put succeeded.
   */
  async #publish(
    cut: CheckpointCut,
    written: readonly SegmentRef[],
    indexes: readonly [string, readonly SegmentBlockInfo[]][],
  ): Promise<{ next: Manifest; previous: Manifest; run: number }> {
    const prior = this.#publishLock;
    let unlock!: () => void;
    this.#publishLock = new Promise<void>((resolve) => {
      unlock = resolve;
    });
    await prior;
    try {
      if (this.#unsure !== undefined) await this.#adoptLandedManifest();
      if (this.closed) throw this.#failure ?? new ClosedError("the engine");
      const newest = this.#manifest;
      const id = newest.id + 1;
      let run = id;
      let segments: SegmentRef[];
      let walNext = cut.walNext;
      let cover = cut.cover;
      if (cut.full) {
        // Runs cut after the compaction stay; it replaces the others (a run cut before it, then listed
        // after it, would win over it with older values). They were all published after those it
        // replaces: its run takes the id just below theirs.
        const beside = this.#compacting!.runs;
        const later = newest.segments.filter((seg) => beside.has(seg.run));
        if (later.length > 0) run = later[0]!.run - 1;
        segments = [...written.map((seg) => ({ ...seg, run })), ...later];
        if (newest.walNext > cut.walNext) {
          walNext = newest.walNext;
          cover = this.#covered;
        }
      } else {
        if (newest.walNext > cut.walNext) throw new Error(`manifest ${newest.id} covers WAL past the cut of an incremental checkpoint not yet published`);
        let kept = newest.segments;
        if (cut.fold !== undefined) {
          kept = foldedAway(newest, cut.fold);
          // The folded run takes the id of the oldest run it replaces: it sits where they sat, below any later run.
          run = cut.fold.runs[0]!;
        }
        segments = [...kept, ...written.map((seg) => ({ ...seg, run }))];
        // A compaction still writing numbers its segments from now on below this manifest's `lastSegment`.
        const compacting = this.#compacting;
        if (compacting !== undefined && compacting.block === undefined) {
          compacting.block = reserveSegmentBlock(this.#segmentCounter);
          this.#segmentCounter = compacting.block.top;
        }
      }
      const next: Manifest = {
        id,
        epoch: this.#epoch,
        walNext,
        segments,
        fences: newest.fences,
        createdAt: this.#manifestTime(),
        lastSegment: this.#segmentCounter,
      };
      try {
        await publishManifest(
          this.#ctx,
          next,
          () => this.#failure !== undefined,
          written.map((seg) => this.#ctx.prefix + seg.name),
        );
      } catch (err) {
        // A put can land and still report failure: the next publish looks first.
        if (!(err instanceof FencedError))
          this.#unsure = { id, cover, compaction: cut.full, besideOf: cut.besideOf, beside: cut.beside, fold: cut.fold, indexes, segments: cut.owned };
        throw err;
      }
      this.#manifest = next;
      this.#covered = cover;
      this.#replayUncovered = false;
      for (const key of cut.owned) this.#ownedSegments.delete(key);
      if (cut.full) {
        this.#compacting = undefined;
        // The compaction holds what the carry held.
        this.#carry = undefined;
        this.#carryLost = false;
      } else {
        this.#besidePublished(cut, run);
        if (cut.besideOf !== undefined) this.#besideCompaction++;
        if (cut.fold !== undefined && cut.beside) this.#folds++;
        if (cut.fold !== undefined && !cut.beside) this.#tierFolds++;
      }
      this.#checkpoints++;
      if (cut.full) this.#compactions++;
      this.#checkpointBytes += written.reduce((n, seg) => n + seg.bytes, 0);
      if (this.#pager !== undefined) {
        for (const [name, blocks] of indexes) this.#pager.addIndex(name, blocks);
        // Values still paged to runs folded into this one are read from it from now on (before `addRuns` replaces the first).
        if (cut.fold !== undefined) this.#pager.folded(cut.fold.runs, next);
        this.#pager.addRuns(next);
        // Values still paged to the runs a compaction dropped are read from it from now on; none is re-pointed.
        if (cut.full) this.#pager.compacted(next);
      }
      return { next, previous: newest, run };
    } finally {
      unlock();
    }
  }

  /**
   * Incremental checkpoint `cut` published run `run`: cut after the
   * compaction still writing, that one keeps its run (and not the runs it
   * folded); cut while a compaction held its slot, the run may be folded.
   */
  #besidePublished(cut: BesideCut, run: number): void {
    const folded = cut.fold?.runs ?? [];
    if (cut.besideOf !== undefined && cut.besideOf === this.#compacting) {
      for (const r of folded) this.#compacting.runs.delete(r);
      this.#compacting.runs.add(run);
    }
    if (!cut.beside) return;
    for (const r of folded) this.#foldable.delete(r);
    this.#foldable.add(run);
  }

  /** The store keys of the segments the newest published manifest lists. */
  #liveSegmentKeys(): Set<string> {
    const manifest = this.#manifest;
    if (this.#liveSegments?.manifest !== manifest) {
      this.#liveSegments = { manifest, keys: new Set(manifest.segments.map((seg) => this.#ctx.prefix + seg.name)) };
    }
    return this.#liveSegments.keys;
  }

  /**
   * After a manifest put failed: it may have landed all the same. A newer
   * manifest of this writer's epoch can only be that one (no other writer
   * uses the epoch, and publishes are one at a time), so it becomes the base
   * of the next publish; publishing under its id again would look like a
   * newer writer's and fence this one. Its segments were all stored before
   * it; no value is paged to them (a compaction's is applied to the pager
   * as one), and the next checkpoint is a full one (the delta was dropped).
   */
  async #adoptLandedManifest(): Promise<void> {
    const unsure = this.#unsure!;
    const landed = await readNewestManifest(this.#ctx, this.#manifest.id);
    if (landed !== undefined && landed.epoch === this.#epoch && landed.id > this.#manifest.id) {
      this.#manifest = landed;
      if (unsure.fold !== undefined) {
        // Values stay paged to the runs it folded: they are read from its run, whose indexes this writer has.
        for (const [name, blocks] of unsure.indexes) this.#pager?.addIndex(name, blocks);
        this.#pager?.folded(unsure.fold.runs, landed);
      }
      this.#pager?.addRuns(landed);
      if (unsure.compaction) this.#pager?.compacted(landed);
      if (!unsure.compaction) this.#besidePublished(unsure, unsure.fold?.runs[0] ?? landed.id);
      this.#replayUncovered = false;
      this.#covered = unsure.cover;
    }
    this.#unsure = undefined;
    for (const key of unsure.segments) this.#ownedSegments.delete(key);
  }

  /**
   * After checkpoint `run` published: every value it wrote that the
   * memtable still holds (no commit changed it since) leaves memory when
   * the policy lets it, or is packed (so it stops holding the WAL object it
   * was a view into, and costs its bytes plus a small header). Values
   * already paged stay as they are, also after a compaction: the pager
   * reads a value paged to a run the compaction dropped from the
   * compaction (`ValuePager.compacted`). Yields like the segment writer does.
   */
  async #pageOut(written: Iterable<[string, StoredValue | null]>, run: number): Promise<boolean> {
    const policy = this.#pager!.policy;
    const state = this.#state;
    let n = 0;
    let sliceStart = performance.now();
    for (const [key, v] of written) {
      // Held by identity: a value committed since is a different array or arena place, and a run never holds a caller's array.
      // A value kept in the arena that is not paged is compact already, and holds no WAL object: it stays.
      if (isHeldBytes(v) && state.holds(key, v)) {
        if (isPageable(policy, key, v)) state.replaceIf(key, v, run);
        else if (!(v instanceof KeptValue)) state.replaceIf(key, v, packValue(key, heldValue(key, v)));
      }
      if (++n % 64 !== 0 || performance.now() - sliceStart < 2) continue;
      await yieldToLoop();
      if (this.closed) return false;
      sliceStart = performance.now();
    }
    return true;
  }

  /**
   * The runs an incremental checkpoint cut beside a compaction folds into
   * its own (of `changedKeys` entries), or undefined: none while the runs
   * published beside compactions since the last one's cut (`#foldable`)
   * number under `maxSegmentRuns`. At the cap, the
   * newest run always, and older ones while each is at most twice what the
   * fold holds so far (size-tiered: a run is rewritten about log2 times,
   * and the cap holds, since the fold replaces at least one run).
   */
  #foldDue(newest: Manifest, changedKeys: number): CheckpointCut["fold"] {
    const runs = segmentRuns(newest).filter((run) => this.#foldable.has(run[0]!.run));
    if (runs.length < this.#opts.maxSegmentRuns) return undefined;
    return foldOf(runs, tierFold(runs.map(runSize), changedKeys));
  }

  /**
   * What a checkpoint of `changedKeys` changes cut with no compaction
   * running writes over `current`'s runs (see compaction-policy.ts): a new
   * run, a new run that folds the newest runs into it at `maxSegmentRuns`,
   * or the whole state.
   */
  #plan(current: Manifest, changedKeys: number): CheckpointPlan {
    return planCheckpoint(segmentRuns(current).map(runSize), changedKeys, this.#state.size, this.#opts.maxSegmentRuns, this.#opts.foldRunsByTier);
  }
}

/** The entries and bytes of one run. */
function runSize(run: readonly SegmentRef[]): RunSize {
  let entries = 0;
  let bytes = 0;
  for (const seg of run) {
    entries += seg.entries;
    bytes += seg.bytes;
  }
  return { entries, bytes };
}

/** The fold of the newest `count` of `runs` (oldest first), as a cut records it. */
function foldOf(runs: readonly SegmentRef[][], count: number): CheckpointCut["fold"] {
  const taken = runs.slice(runs.length - count);
  return { runs: taken.map((run) => run[0]!.run), segments: taken };
}

/**
 * The segments of `newest` without the runs `fold` replaces, which must be
 * its newest runs exactly as the fold read them: a fold that met anything
 * else would drop or duplicate entries, so it fails (and the next
 * checkpoint is a full one).
 */
function foldedAway(newest: Manifest, fold: { runs: number[]; segments: SegmentRef[][] }): SegmentRef[] {
  const names = fold.segments.flat().map((seg) => seg.name);
  const kept = newest.segments.slice(0, newest.segments.length - names.length);
  const tail = newest.segments.slice(kept.length).map((seg) => seg.name);
  if (tail.length !== names.length || tail.some((name, i) => name !== names[i])) {
    throw new Error(`manifest ${newest.id} no longer ends with the runs a checkpoint folded (${fold.runs.join(", ")})`);
  }
  return kept;
}
