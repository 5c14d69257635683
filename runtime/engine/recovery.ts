/**
 * @module Loading state from a store: the newest manifest, its segments and
 * the WAL replay after it. Shared by the writer's open and by readers.
 *
 * WAL replay walks sequence numbers from the manifest's `walNext` and stops
 * at the first missing one: a commit is acknowledged only once its object
 * and every earlier one are stored, so nothing past a gap was acknowledged.
 * A fence marker sends the walk to its resume sequence; objects in between
 * are late puts of a fenced writer and are never replayed. An object whose
 * epoch is below one already replayed is also skipped, defensively.
 *
 * A gap is not always a crash, though: an object deleted out of the middle
 * of the log looks the same to the walk. `explainGap` tells them apart from
 * what lies beyond the gap (see its rule), and the loaders refuse to open a
 * store whose objects no manifest explains (`checkExplained`).
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { StoreCorruptedError, StoreUnavailableError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import type { ObjectStore } from "../store/object-store.js";
import { WAL_FENCE_JUMP, manifestKey, parseNumberedKey, parseSegmentKey, walKey } from "./layout.js";
import { decodeManifest, emptyManifest, segmentRuns, type Manifest, type SegmentRef } from "./manifest.js";
import type { RetryPolicy } from "./retry.js";
import { checkSegmentIdentity, readSegmentRange, readSegmentTail } from "./segment-reads.js";
import {
  decodeSegmentTail,
  readKeySection,
  readSegmentEntries,
  SECTION_IN_BLOCK,
  segmentCorrupted,
  SECTION_KEY_TAIL,
  type SegmentBlockInfo,
  type SegmentTail,
} from "./segment-format.js";
import { ChangedKeys } from "./changed-keys.js";
import { deltaOverflows, type DeltaMap } from "./sorted-map.js";
import type { KeyHeads } from "./key-heads.js";
import { holdUntilPaged, ValueArena, type PagePolicy, type StateMap } from "./paged-value.js";
import { applyOps } from "./apply-ops.js";
import { isWellFormed, KeyBytes, KeyHasher, KeyRunBuilder } from "./key-run.js";
import { LayeredState } from "./layered-state.js";
import type { MemtableRange } from "./memtable-size.js";
import { mergeSegmentRuns } from "./open-merge.js";
import { borrowWithRetries, firstKey, getWithRetries, listKeys } from "./store-ops.js";
import { decodeWal, type WalObject } from "./wal-format.js";
import type { BatchOp } from "./write-batch.js";

/** Where the replay's ops meet the state; re-exported for the loaders that import it from here. */

/** The store an engine reads and writes, where in it, and how it retries. */
export interface StoreContext {
  store: ObjectStore;
  /** Key prefix of every engine object ("" or ending in "/"). */
  prefix: string;
  retry: RetryPolicy;
}

/** WAL objects fetched ahead of the one being replayed. */
const PREFETCH = 64;
/** Ops replayed between turns of the event loop (a batch is never split), so a long WAL tail does not block it in one go. */
const OPS_PER_TURN = 4_096;

/**
 * Manifests a read of the newest takes by number past its listing's newest
 * before it gives up. A listing lags a few checkpoints at most, and a writer
 * adds one manifest per checkpoint while the read goes on; this many in a
 * row means a store that answers numbers nothing was stored under (a broken
 * proxy or mock answering every read), or a writer checkpointing in a loop
 * faster than one read each, and the read would otherwise go on for ever.
 */
export const MAX_MANIFESTS_PAST_LISTING = 1_000;

/**
 * The newest manifest, or the empty manifest of a fresh store; with `after`,
 * the newest past manifest `after`, or undefined when there is none.
 *
 * A listing is not a snapshot: it may lag behind the puts made before it
 * (a store that answers listings from a replica, a listing that ran while a
 * writer published) or miss objects a live writer deleted meanwhile. So the
 * numbers past the listing's newest (and past `floor`, a manifest the caller
 * already read: the answer is never older) are read by number, one by one
 * until one is absent, since a read of a key answers what is stored. A
 * manifest more than the writer's garbage collection keeps behind the
 * newest is gone, so a listing that lagged further is listed again.
 */
export async function readNewestManifest(ctx: StoreContext, after = -1, floor = 0): Promise<Manifest | undefined> {
  return (await readNewest(ctx, after, floor, false)).newest;
}

/**
 * What a load asks once its walk ended: the newest manifest past `after`
 * (the loaded one, or the claim it loaded under), and when there is none,
 * whether manifest `after` itself is gone (see `loadState`). `checkGone`
 * false skips the latter (a load under a claim).
 */
export function newerOrGone(ctx: StoreContext, after: number, checkGone: boolean): Promise<{ newest: Manifest | undefined; gone: boolean }> {
  return readNewest(ctx, after, 0, checkGone && after > 0);
}

/**
 * `readNewestManifest`, and with `checkGone`, whether manifest `after` is
 * gone. The read of the number after the listing's newest goes out beside
 * the one read that usually follows it, one round trip instead of two: the
 * newest's bytes (an open), or manifest `after` when the listing found
 * nothing past it (the check after a load). The listing comes first, so the
 * check is still read after it: a manifest a consistent listing missed was
 * deleted before it, and `after`, older, before that. Only a listing that
 * lagged behind three checkpoints published and collected within the two
 * reads' spread could now miss what the reads in turn saw.
 */
async function readNewest(ctx: StoreContext, after: number, floor: number, checkGone: boolean): Promise<{ newest: Manifest | undefined; gone: boolean }> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const head = `${ctx.prefix}manifest/`;
    const keys = await listKeys(ctx.store, head, ctx.retry, after >= 0 ? manifestKey(ctx.prefix, after) : undefined);
    let newest = Math.max(after, floor);
    for (const k of keys) newest = Math.max(newest, parseNumberedKey(ctx.prefix, "manifest", k) ?? -1);
    // Read beside the first probe: the newest's bytes when it is past `after`, else `after` for the gone check.
    const besideId = newest > after ? newest : checkGone ? after : undefined;
    const beside = besideId !== undefined && besideId > 0 ? getWithRetries(ctx.store, manifestKey(ctx.prefix, besideId), ctx.retry) : undefined;
    // Settled even when the probe fails first (its rejection is the probe's to report).
    beside?.catch(() => undefined);
    let bytes: Uint8Array | null = null;
    for (let past = 0; ; past++) {
      if (past === MAX_MANIFESTS_PAST_LISTING) throw noEndPastListing(ctx, newest);
      const next = await getWithRetries(ctx.store, manifestKey(ctx.prefix, newest + 1), ctx.retry);
      if (next === null) break;
      newest++;
      bytes = next;
    }
    if (after >= 0 && newest <= after) return { newest: undefined, gone: checkGone && (await beside) === null };
    if (newest <= 0) return { newest: emptyManifest(), gone: false };
    const key = manifestKey(ctx.prefix, newest);
    bytes ??= besideId === newest && beside !== undefined ? await beside : await getWithRetries(ctx.store, key, ctx.retry);
    // Deleted between list and get: a newer manifest exists, list again.
    if (bytes === null) continue;
    return { newest: decodeManifest(key, bytes, newest), gone: false };
  }
  throw new StoreUnavailableError("read", `${ctx.prefix}manifest/`, new Error("the newest manifest kept disappearing between list and get"));
}

/**
 * Unavailable rather than corrupted: nothing read was shown damaged, and a
 * writer publishing faster than the read is a passing state that another
 * open, later, gets past; the advice to restore or remove data that
 * `StoreCorruptedError` gives would be wrong for that store.
 */
function noEndPastListing(ctx: StoreContext, newest: number): StoreUnavailableError {
  return new StoreUnavailableError(
    "read",
    `${ctx.prefix}manifest/`,
    new Error(
      `the store answered ${MAX_MANIFESTS_PAST_LISTING} manifests in a row past the newest it listed (up to number ${newest}) and still had another: it answers reads of objects it does not list, or another process publishes manifests faster than they can be read`,
    ),
    "check that the store answers a read of a missing object as absent (a proxy or test double answering every read does not), and that no other process checkpoints this store in a loop, then open again",
  );
}

/** Segments fetched whole ahead of the one being read at open. */
const SEGMENTS_AHEAD = 4;
/** Segment tails fetched ahead (they are a few hundred KiB, not MiB). */
const TAILS_AHEAD = 8;
/** Key section bytes per entry assumed before any tail was read (the queue's take about 4.5; longer ones cost a second read). */
const FIRST_TAIL_GUESS = 8;
/** Bytes read besides the section: the block index and footer (about 1 KB per 4 MiB segment), with room. */
const TAIL_SLACK = 16 * 1024;
/**
 * Most keys a run's builder is told to expect. The manifest's counts are
 * checked only as each segment is read, so a count it lies about must not
 * size an allocation before that (2^40 entries threw a RangeError); a run
 * of more keys than told is built right, growing as it goes.
 */
const MAX_HINTED_KEYS = 2 ** 24;

/** A segment as open fetched it: its tail decoded, and its bytes when read whole. */
interface FetchedSegment {
  tail: SegmentTail;
  whole: Uint8Array | undefined;
}

/**
 * Loads every segment of `manifest` into a new state. A writer's open
 * (a `policy`, ranged reads) of two segment runs or more merges them k-way
 * from their key sections into one compact key run (open-merge.ts), each
 * key's newest entry winning. Otherwise, or when a segment has no usable key
 * section, each segment run becomes one compact key run (key-run.ts), built
 * straight from its segments in order; the entries and tombstones of a newer
 * run mark the older runs' entries of the same keys dead. Resolves to undefined when a
 * segment is missing: for a reader that means a checkpoint replaced the
 * manifest. Within a run, key ranges must be disjoint and ascending (see
 * manifest.ts). With a `policy`, values it lets page out stay in their
 * segments (the state holds their run id) and the others are packed, so no
 * segment object stays in memory; each segment is then read by its tail
 * (block index and key section, one ranged read, up to `TAILS_AHEAD`
 * ahead) and read whole only when it has no key section, its section
 * leaves out a value this policy holds (up to `SEGMENTS_AHEAD` ahead while
 * segments keep needing that), or the store has no ranged reads. Without a policy (readers) every value is
 * held, so segments are read whole. `onIndex` hears each segment's block
 * index (the writer's value pager keeps them).
 */
export async function loadSegments(
  ctx: StoreContext,
  manifest: Manifest,
  onMissing: (key: string) => void = () => {},
  policy?: PagePolicy,
  onIndex?: (name: string, blocks: readonly SegmentBlockInfo[]) => void,
  memtableKeys?: number,
  keyHeads?: KeyHeads,
): Promise<StateMap | undefined> {
  const state = newState(policy, memtableKeys, keyHeads);
  const segments = manifest.segments;
  // Tails while segments keep having usable key sections; whole segments after one that did not.
  // A store without ranged reads returns the whole object for every read: a tail read, and a second for a longer section, would each fetch all of it.
  const ranged = ctx.store.getRange !== undefined;
  let wholeAhead = policy === undefined || !ranged;
  let perEntry = FIRST_TAIL_GUESS;
  const fetches: (Promise<FetchedSegment | null> | undefined)[] = [];
  /** Tails the merge read, by segment name, when it gave up. */
  const readEarly = new Map<string, Promise<FetchedSegment | null>>();
  const fetch = (i: number): Promise<FetchedSegment | null> => {
    while (fetches.length < Math.min(segments.length, i + (wholeAhead ? SEGMENTS_AHEAD : TAILS_AHEAD))) {
      const seg = segments[fetches.length]!;
      // A tail the merge below read before it gave up is not read again.
      const early = readEarly.get(seg.name);
      readEarly.delete(seg.name);
      const p = early ?? (wholeAhead ? fetchWhole(ctx, seg) : fetchTail(ctx, seg, Math.ceil(seg.entries * perEntry * 1.125) + TAIL_SLACK));
      p.catch(() => {});
      fetches.push(p);
    }
    const p = fetches[i]!;
    fetches[i] = undefined; // let its bytes go once read
    return p;
  };
  let i = 0;
  let oldest = true;
  const prefixes = new BytePrefixes(policy?.keyPrefixes ?? []);
  const kb = new KeyBytes();
  const hasher = new KeyHasher();
  /** Whether open pages out a value of `valueLen` bytes of the key in `key[0..keyLen)`. */
  const pages = (key: Buffer, from: number, keyLen: number, valueLen: number) =>
    policy !== undefined && valueLen >= policy.minBytes && prefixes.hasPrefix(key, from, keyLen);
  const runs = segmentRuns(manifest);
  // Several runs whose segments all have usable key sections: one k-way merge (open-merge.ts), one key run.
  if (policy !== undefined && ranged && runs.length >= 2) {
    const entries = Math.min(
      segments.reduce((n, seg) => n + seg.entries, 0),
      segments.reduce((n, seg) => n + seg.bytes, 0),
      MAX_HINTED_KEYS,
    );
    const builder = new KeyRunBuilder(entries * 24, entries);
    try {
      const merged = await mergeSegmentRuns(
        runs,
        {
          objectKey: (seg) => ctx.prefix + seg.name,
          tail: async (seg) => {
            // Sized from the sections read so far, as below (the first of each run are read at once, on the guess).
            const p = fetchTail(ctx, seg, Math.ceil(seg.entries * perEntry * 1.125) + TAIL_SLACK);
            readEarly.set(seg.name, p);
            const { tail } = present(ctx.prefix + seg.name, await p);
            if (tail.keys !== undefined && seg.entries > 0) perEntry = (tail.keys.end - tail.keys.start) / seg.entries;
            // Kept only while it may make the merge give up: a map of every tail would hold them all.
            if (tail.keys !== undefined) readEarly.delete(seg.name);
            return tail;
          },
          pages: (key, keyLen, valueLen) => pages(key, 0, keyLen, valueLen),
          ...(onIndex === undefined ? {} : { onIndex: (name: string, tail: SegmentTail) => onIndex(name, tail.blocks) }),
        },
        builder,
      );
      if (merged) {
        state.addRun(builder.finish());
        return state;
      }
      for (const p of readEarly.values()) p.catch(() => {});
    } catch (err) {
      if (!(err instanceof SegmentGone)) throw err;
      onMissing(err.key);
      return undefined;
    }
    // A segment without a usable key section: run by run below, reading such segments whole.
  }
  try {
    for (const run of runs) {
      // Every entry takes bytes of its segment; and the manifest's counts are not yet checked (MAX_HINTED_KEYS).
      const entries = Math.min(
        run.reduce((n, seg) => n + seg.entries, 0),
        run.reduce((n, seg) => n + seg.bytes, 0),
        MAX_HINTED_KEYS,
      );
      // Told the count, the builder fills its filter as keys come instead of keeping a hash per key for the end.
      // Read whole with every value held, a run's segments bound its bytes (`wholeRunBound`): one buffer, never grown.
      // (Values paged out leave the run a fraction of its segments: that bound would be mostly spare.)
      const builder = new KeyRunBuilder(entries * 24, entries, policy === undefined ? wholeRunBound(run, entries) : -1);
      let last: string | undefined;
      for (const seg of run) {
        const key = ctx.prefix + seg.name;
        let got = present(key, await fetch(i++));
        const { tail } = got;
        if (tail.entryCount !== seg.entries) throw segmentCorrupted(key, `segment holds ${tail.entryCount} entries, the manifest says ${seg.entries}`);
        onIndex?.(seg.name, tail.blocks);
        // A section is usable when every value it leaves in the blocks is one this open pages out
        // (so never without a policy). Segments follow the one before in that: it sets what is fetched ahead.
        let usable = tail.keys !== undefined && policy !== undefined;
        if (usable && got.whole === undefined) {
          // One walk checks the section and builds its entries as it goes; a section found unusable part
          // way is taken back out of the builder, and the segment read whole below. Kills made meanwhile
          // are the ones that read makes again. A failed check fails the open, dropping the whole state.
          const mark = builder.mark();
          let first = true;
          // Bytes the key shares with the last one added (the least of the section's shared bytes since it,
          // as keys ascend); -1 at a segment's first key, which the builder compares with the run's last.
          let sinceAdded = -1;
          readKeySection(key, tail, (k, keyLen, kind, valueLen, section, valueAt, shared) => {
            if (first) {
              if (last !== undefined && compareKeys(last, k.toString("utf8", 0, keyLen)) >= 0) {
                throw segmentCorrupted(key, "segment key range overlaps the previous segment of its run");
              }
              shared = 0;
            }
            const hash = hasher.next(k, keyLen, shared);
            const known = first ? -1 : Math.min(sinceAdded, shared);
            first = false;
            // The oldest run is a snapshot: a tombstone there only says the key is absent.
            if (!oldest && state.mayHoldInRuns(kb.setBytes(k, 0, keyLen, hash))) state.killBytes(kb);
            if (valueLen < 0 || !usable) {
              sinceAdded = known;
              return;
            }
            sinceAdded = Number.MAX_SAFE_INTEGER;
            if (pages(k, 0, keyLen, valueLen)) builder.addPagedBytes(k, 0, keyLen, seg.run, known, hash);
            else if (kind === SECTION_IN_BLOCK) usable = false;
            else if (kind === SECTION_KEY_TAIL) builder.addKeyTailBytes(k, 0, keyLen, valueLen, known, hash);
            else builder.addHeldBytes(k, 0, keyLen, section, valueAt, valueLen, true, known, hash);
          });
          if (seg.entries > 0) perEntry = (tail.keys!.end - tail.keys!.start) / seg.entries;
          wholeAhead = !usable || !ranged;
          if (usable) {
            if (seg.entries > 0) last = tail.blocks[tail.blocks.length - 1]!.lastKey;
            // Tails fetched ahead are often in already: without this turn a whole run would be built in one block of the event loop.
            await yieldToLoop();
            continue;
          }
          builder.rollback(mark);
        } else {
          if (usable) {
            readKeySection(key, tail, (k, keyLen, kind, valueLen) => {
              if (kind === SECTION_IN_BLOCK && !pages(k, 0, keyLen, valueLen)) usable = false;
            });
            if (seg.entries > 0) perEntry = (tail.keys!.end - tail.keys!.start) / seg.entries;
          }
          wholeAhead = !usable || !ranged;
        }
        // Gone since its tail was read: missing as well.
        if (got.whole === undefined) got = present(key, await fetchWhole(ctx, seg));
        const bytes = got.whole!;
        let first = true;
        let lastAt = 0;
        let lastLen = 0;
        const n = readSegmentEntries(key, bytes, (buf, keyAt, keyLen, valueAt, valueLen) => {
          if (first && last !== undefined && compareKeys(last, buf.toString("utf8", keyAt, keyAt + keyLen)) >= 0) {
            throw segmentCorrupted(key, "segment key range overlaps the previous segment of its run");
          }
          first = false;
          lastAt = keyAt;
          lastLen = keyLen;
          // The oldest run is a snapshot: a tombstone there only says the key is absent.
          if (!oldest && state.mayHoldInRuns(kb.setBytes(buf, keyAt, keyLen))) state.kill(buf.toString("utf8", keyAt, keyAt + keyLen));
          if (valueLen < 0) return;
          if (pages(buf, keyAt, keyLen, valueLen)) builder.addPagedBytes(buf, keyAt, keyLen, seg.run);
          else builder.addHeldBytes(buf, keyAt, keyLen, buf, valueAt, valueLen, policy !== undefined);
        });
        if (n > 0) last = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8", lastAt, lastAt + lastLen);
        if (n !== seg.entries) throw segmentCorrupted(key, `segment holds ${n} entries, the manifest says ${seg.entries}`);
      }
      state.addRun(builder.finish());
      oldest = false;
    }
  } catch (err) {
    // A damaged or missing segment: the state is dropped, so it stops merging in idle turns.
    state.stopIdleMerges();
    if (!(err instanceof SegmentGone)) throw err;
    onMissing(err.key);
    return undefined;
  }
  return state;
}

/**
 * Most bytes a key run built from the segments `run` read whole takes
 * (`entries` of them, as hinted): an entry there is never longer than in
 * its segment plus a header byte and a value tag (its key's suffix and
 * length are no longer, its value's length no longer than the segment's
 * tagged one), and the segments also hold checksums, an index and a key
 * section. Keys whose shared bytes take a varint of their own, or values
 * paged to a run id longer than the value, can pass it: the builder then
 * carries on growing.
 */
function wholeRunBound(run: readonly SegmentRef[], entries: number): number {
  return run.reduce((n, seg) => n + seg.bytes, 0) + 2 * entries;
}

/** Thrown inside `loadSegments` when a segment is missing, at its first read or its whole read after its tail: its one exit. */
class SegmentGone {
  constructor(readonly key: string) {}
}

/** `got`, or the end of the load when the segment `key` is gone. */
function present(key: string, got: FetchedSegment | null): FetchedSegment {
  if (got === null) throw new SegmentGone(key);
  return got;
}

/**
 * A whole segment, its tail decoded; null when it is gone. Borrowed: the
 * load copies every key and value it keeps out of it and never writes it.
 */
async function fetchWhole(ctx: StoreContext, seg: SegmentRef): Promise<FetchedSegment | null> {
  const key = ctx.prefix + seg.name;
  const whole = await borrowWithRetries(ctx.store, key, ctx.retry);
  if (whole === null) return null;
  // As a ranged read refuses it (readSegmentRange): later ranged reads of its values would read the wrong bytes.
  if (whole.byteLength !== seg.bytes) throw segmentCorrupted(key, `segment is ${whole.byteLength} bytes, but its manifest lists ${seg.bytes}`);
  const tail = decodeSegmentTail(key, whole, whole.byteLength);
  checkSegmentIdentity(key, seg, tail);
  return { tail, whole };
}

/** The tail of a segment, decoded (see `readSegmentTail`); null when it is gone. */
async function fetchTail(ctx: StoreContext, seg: SegmentRef, guess: number): Promise<FetchedSegment | null> {
  const tail = await readSegmentTail(ctx, seg, guess, (offset, length) => readSegmentRange(ctx, seg, offset, length));
  if (tail === null) return null;
  const key = ctx.prefix + seg.name;
  const decoded = decodeSegmentTail(key, tail, seg.bytes);
  checkSegmentIdentity(key, seg, decoded);
  return { tail: decoded, whole: undefined };
}

/**
 * @internal Memtable size or the range it is chosen in (and entries merged per idle turn) of every state
 * built from now on in this process (writers' and readers'): tests lower it
 * so that small fills freeze and merge runs (and merges last). Undefined
 * keeps the state's default; the library never sets it.
 */
export const stateTuning: { memtableKeys: number | undefined; idleSlice?: number; memtableRange?: MemtableRange } = { memtableKeys: undefined };

/** Key prefixes as UTF-8, to test keys still in bytes (a prefix with a lone surrogate matches no stored key, so it is left out). */
class BytePrefixes {
  readonly #prefixes: Buffer[];
  constructor(prefixes: readonly string[]) {
    this.#prefixes = prefixes.filter(isWellFormed).map((p) => Buffer.from(p, "utf8"));
  }
  /** Whether `buf[at..at+len)` starts with one of the prefixes. */
  hasPrefix(buf: Buffer, at: number, len: number): boolean {
    for (const p of this.#prefixes) {
      if (p.length > len) continue;
      let i = 0;
      while (i < p.length && buf[at + i] === p[i]) i++;
      if (i === p.length) return true;
    }
    return false;
  }
}

/**
 * An empty state; with a paging `policy`, its memtable keeps the values a
 * checkpoint will page out. `memtableKeys` (the engine's option) sizes its
 * memtable; `stateTuning` still overrides it for tests. `keyHeads` (the
 * engine's option) splits its memtable's map.
 */
export function newState(policy?: PagePolicy, givenMemtableKeys?: number, keyHeads?: KeyHeads): StateMap {
  const { idleSlice, memtableRange } = stateTuning;
  const memtableKeys = stateTuning.memtableKeys ?? givenMemtableKeys;
  return new LayeredState({
    ...(policy === undefined ? {} : { hold: holdUntilPaged(policy) }),
    ...(memtableKeys === undefined ? {} : { memtableKeys }),
    ...(keyHeads === undefined ? {} : { keyHeads }),
    ...(idleSlice === undefined ? {} : { idleSlice }),
    ...(memtableRange === undefined ? {} : { memtableRange }),
  });
}

/** How far a WAL replay got, and what it passed on the way. */
export interface WalWalk {
  /** The next sequence number to read. */
  pos: number;
  /** Highest epoch replayed so far. */
  maxEpoch: number;
  /** Fence markers passed. */
  fences: number[];
  /** Objects and bytes replayed (fences included). */
  objects: number;
  /** Objects of committed batches replayed (fences not included). */
  replayed: number;
  bytes: number;
  /** A listed object was gone when read (a checkpoint deleted it). */
  vanished: boolean;
  /** The highest sequence number listed past the gap the walk stopped at; -1 when none. */
  beyond: number;
}

/**
 * Replays the WAL from `walk.pos` to the first gap, calling `apply` per batch
 * in order. Every object is verified before any batch of it is applied.
 * `passed` hears the walk after each whole object: when a later one fails
 * (corrupt, or the store unavailable), that is where what was applied ends.
 */
export async function walkWal(ctx: StoreContext, walk: WalWalk, apply: (ops: BatchOp[]) => void, passed: (walk: WalWalk) => void = () => {}): Promise<WalWalk> {
  const keys = await listKeys(ctx.store, `${ctx.prefix}wal/`, ctx.retry, walKey(ctx.prefix, walk.pos - 1));
  const seqs = ascendingNumbers(ctx.prefix, keys);
  const fetches: (Promise<Uint8Array | null> | undefined)[] = [];
  const fetch = (i: number): Promise<Uint8Array | null> => {
    while (fetches.length < Math.min(seqs.length, i + PREFETCH)) {
      const p = getWithRetries(ctx.store, walKey(ctx.prefix, seqs[fetches.length]!), ctx.retry);
      p.catch(() => {});
      fetches.push(p);
    }
    const p = fetches[i]!;
    fetches[i] = undefined; // let its bytes go once replayed
    return p;
  };
  walk = { ...walk, beyond: -1 };
  let sinceTurn = 0;
  for (let i = 0; i < seqs.length; i++) {
    const seq = seqs[i]!;
    if (seq < walk.pos) continue; // inside a fence's skipped range
    if (seq > walk.pos) {
      // A gap: see explainGap for what may lie beyond it.
      return { ...walk, beyond: seqs[seqs.length - 1]! };
    }
    const bytes = await fetch(i);
    if (bytes === null) return { ...walk, vanished: true };
    const key = walKey(ctx.prefix, seq);
    const obj = decodeWal(key, bytes, seq);
    if (replaysBatches(walk, obj)) {
      // Prefetched objects are in already, and awaiting one is no turn of the event loop: without
      // turns a long log would replay in one block. Only between batches, so a reader's state
      // holds whole commits at every turn.
      for (const ops of obj.batches) {
        if (sinceTurn >= OPS_PER_TURN) {
          sinceTurn = 0;
          await yieldToLoop();
        }
        apply(ops);
        sinceTurn += ops.length;
      }
    }
    walk = passWalObject(walk, obj, bytes.byteLength);
    passed(walk);
  }
  return walk;
}

/**
 * The WAL sequence numbers of `keys`, ascending, each once. A store's
 * listing is meant to be in key order, but one that is not (a proxy merging
 * pages, a replica) must not make the walk take a later object for a gap:
 * a reader then served the state before the log, and a writer's open
 * fenced for ever. In order already (the rule), this is one pass.
 */
function ascendingNumbers(prefix: string, keys: readonly string[]): number[] {
  const seqs: number[] = [];
  let ordered = true;
  for (const k of keys) {
    const s = parseNumberedKey(prefix, "wal", k);
    if (s === undefined) continue;
    if (seqs.length > 0 && s <= seqs[seqs.length - 1]!) ordered = false;
    seqs.push(s);
  }
  if (ordered) return seqs;
  seqs.sort((a, b) => a - b);
  return seqs.filter((s, i) => i === 0 || s !== seqs[i - 1]);
}

/**
 * Why the gap a walk stopped at cannot be the in-flight window of a crashed
 * writer, or undefined when it can be (or there is nothing beyond it).
 *
 * The rule: a writer issues a put for sequence s only while s is within
 * `WAL_FENCE_JUMP - 1` of its durable watermark, and the watermark never
 * passes a missing object; so objects that a crash leaves past a gap at g
 * all lie below g + WAL_FENCE_JUMP - 1, and each records a watermark below g
 * (wal-format.ts). An object farther out, or one whose watermark reaches g,
 * was written after g was stored: g was deleted. (A checkpoint deletes WAL
 * objects too, but only below the `walNext` of a newer manifest; callers
 * rule that out before treating the answer as corruption.) `"vanished"`:
 * the object beyond was deleted while being read.
 */
export async function explainGap(ctx: StoreContext, walk: WalWalk): Promise<string | "vanished" | undefined> {
  const gap = walk.pos;
  const last = walk.beyond;
  if (last < 0) return undefined;
  if (last >= gap + WAL_FENCE_JUMP - 1) {
    return `WAL object ${last} exists ${last - gap} sequence numbers past it, farther than any writer puts ahead of its durable log`;
  }
  const key = walKey(ctx.prefix, last);
  const bytes = await getWithRetries(ctx.store, key, ctx.retry);
  if (bytes === null) return "vanished";
  const obj = decodeWal(key, bytes, last);
  if (obj.watermark >= gap) {
    return `WAL object ${last} was written when every object up to ${obj.watermark} was stored`;
  }
  return undefined;
}

/**
 * Why the objects of the store are not explained by `base` (the newest
 * manifest found), or undefined when they are: WAL objects or segments
 * written by a writer epoch newer than any manifest records (a writer
 * publishes its manifest before writing anything), or any WAL object or
 * segment while no manifest exists at all. `segmentKeys`, the store's
 * segment objects listed before `walk` began (a writer's open lists them;
 * readers skip that listing), are checked too. Listed after the walk, a
 * live writer's checkpoint could show a segment covering WAL objects stored
 * after the walk's listing: taken for a deleted manifest's. Returns the key
 * of the unexplained object with why.
 */
export async function findUnexplained(
  ctx: StoreContext,
  base: Manifest,
  walk: WalWalk,
  segmentKeys: readonly string[] | undefined,
): Promise<{ key: string; detail: string } | undefined> {
  if (base.id === 0) {
    for (const dir of ["wal/", "seg/"]) {
      const key = await firstKey(ctx.store, ctx.prefix + dir, ctx.retry);
      if (key !== undefined) return { key, detail: "it exists, but no manifest does: every manifest of this store was deleted" };
    }
    return undefined;
  }
  if (walk.maxEpoch > base.epoch) {
    return {
      key: manifestKey(ctx.prefix, base.id + 1),
      detail: `it is missing: WAL objects of writer epoch ${walk.maxEpoch} exist, but the newest manifest (${base.id}) has epoch ${base.epoch}`,
    };
  }
  if (segmentKeys === undefined) return undefined;
  // Segments are named by writer epoch and a per-writer counter, so names order by age.
  type Name = { epoch: number; n: number };
  const newer = (a: Name, b: Name) => a.epoch > b.epoch || (a.epoch === b.epoch && a.n > b.n);
  const live = new Set(base.segments.map((s) => ctx.prefix + s.name));
  let newestLive: Name = { epoch: -1, n: -1 };
  for (const key of live) {
    const parsed = parseSegmentKey(ctx.prefix, key);
    if (parsed !== undefined && newer(parsed, newestLive)) newestLive = parsed;
  }
  for (const key of segmentKeys) {
    const parsed = parseSegmentKey(ctx.prefix, key);
    if (parsed === undefined) continue;
    if (parsed.epoch > base.epoch) {
      return {
        key,
        detail: `it was written by writer epoch ${parsed.epoch}, but the newest manifest (${base.id}) has epoch ${base.epoch}: a newer manifest is missing`,
      };
    }
    // An unlisted segment written after the manifest was published is a
    // checkpoint that crashed before publishing (the WAL it covered is still
    // there: its deletion follows publishing, the first object first; see
    // collectGarbage) or one whose manifest was deleted (that WAL is gone).
    // Only a segment of the manifest's own epoch can be that: a newer
    // manifest lists its base's segments and its own writer's, never a
    // segment of an older epoch. The manifest's `lastSegment` says which
    // came after it; a manifest of an earlier version lacks it, and a
    // segment newer than every one it lists stands in.
    if (live.has(key) || parsed.epoch !== base.epoch || walk.replayed > 0) continue;
    if (base.lastSegment === undefined ? newer(parsed, newestLive) : parsed.n > base.lastSegment) {
      return {
        key,
        detail: `no manifest lists it, it was written after manifest ${base.id} (the newest), and the WAL that manifest replays from (sequence ${base.walNext}) is gone: the newer manifest that listed it was deleted`,
      };
    }
  }
  return undefined;
}

/** Whether a walk at `walk` applies the batches of `obj`: a fence has none, and an object of an older epoch than one replayed is skipped. */
function replaysBatches(walk: WalWalk, obj: WalObject): obj is WalObject & { kind: "batches" } {
  return obj.kind === "batches" && obj.epoch >= walk.maxEpoch;
}

/** The walk after one verified WAL object, its batches applied or skipped (`replaysBatches`). */
function passWalObject(walk: WalWalk, obj: WalObject, size: number): WalWalk {
  const next = { ...walk, objects: walk.objects + 1, bytes: walk.bytes + size };
  if (obj.kind === "fence") {
    next.fences = [...walk.fences, obj.seq];
    next.maxEpoch = Math.max(walk.maxEpoch, obj.epoch);
    next.pos = obj.resumeAt;
    return next;
  }
  next.replayed++;
  if (obj.epoch >= walk.maxEpoch) next.maxEpoch = obj.epoch;
  next.pos = obj.seq + 1;
  return next;
}

/** A walk that has read nothing yet and starts at sequence `pos`. */
export function newWalk(pos: number): WalWalk {
  return { pos, maxEpoch: 0, fences: [], objects: 0, replayed: 0, bytes: 0, vanished: false, beyond: -1 };
}

/** A state loaded from a store: the manifest it starts from, the tree, and how far the WAL replay got. */
export interface LoadedState {
  manifest: Manifest;
  /** Values only, unless `LoadOptions.policy` let some stay paged. */
  tree: StateMap;
  walk: WalWalk;
  /** The changes the WAL replay made (when asked for; undefined once too many to track). */
  delta: DeltaMap | undefined;
  /** The block index of each segment, by name (when loaded with a `policy`: the value pager's). */
  indexes: Map<string, readonly SegmentBlockInfo[]>;
}

/** What `loadState` checks and records besides loading. */
export interface LoadOptions {
  /** Record the WAL replay's changes in `delta` (a writer's next incremental checkpoint needs them). */
  trackDelta: boolean;
  /** Also list segments to check that none is newer than the manifest (a writer's open). */
  checkSegments: boolean;
  /** Leave the values this policy lets page out in their segments (a writer with a value cache). */
  policy?: PagePolicy;
  /** Keys the state's memtable holds before it freezes them into a key run (`EngineOptions.memtableKeys`). */
  memtableKeys?: number;
  /** Where the state's memtable splits its map (`EngineOptions.keyHeads`). */
  keyHeads?: KeyHeads;
  /**
   * Load this manifest instead of the newest, under a claim this opener has
   * already published (manifest number `claimed`): only a manifest past the
   * claim counts as the store changing.
   */
  under?: { manifest: Manifest; claimed: number };
  /**
   * A state already served (a reader's): the load starts from a manifest
   * numbered `manifest` or later, and a load whose WAL replay ends before
   * `walPos` resolves to undefined (its listing missed objects the served
   * state replayed), so the caller never moves back.
   */
  floor?: { manifest: number; walPos: number };
}

/**
 * Loads the newest manifest, its segments and the WAL after it, and checks
 * that the result is the whole durable state: no object missing from the
 * middle of the log (`explainGap`), no data that no manifest explains
 * (`findUnexplained`), no segment the manifest lists missing. Each of those
 * can also be a checkpoint running meanwhile (it deletes what a newer
 * manifest covers), so each is first checked against the manifest listing:
 * when a newer manifest exists, this resolves to undefined and the caller
 * starts over; otherwise it throws `StoreCorruptedError` naming the object.
 * The same check runs after a clean walk, so a checkpoint that deleted WAL
 * objects before they were listed is never mistaken for the end of the log.
 */
export async function loadState(ctx: StoreContext, opts: LoadOptions): Promise<LoadedState | undefined> {
  const manifest = opts.under?.manifest ?? (await readNewestManifest(ctx, -1, opts.floor?.manifest))!;
  // A newer manifest, or the loaded one deleted: only a newer one's garbage collection deletes it, and the newer ones a
  // listing missed may be deleted too by now (the writer keeps three), so neither the listing nor a read by number finds them.
  const newerOrGoneNow = () => newerOrGone(ctx, opts.under?.claimed ?? manifest.id, opts.under === undefined);
  /** Whether a checkpoint moved the store on since `manifest` was read. */
  const changed = async (): Promise<boolean> => {
    const end = await newerOrGoneNow();
    return end.newest !== undefined || end.gone;
  };
  let missingSegment = "";
  const indexes = new Map<string, readonly SegmentBlockInfo[]>();
  const onIndex = opts.policy === undefined ? undefined : (name: string, blocks: readonly SegmentBlockInfo[]) => indexes.set(name, blocks);
  const tree = await loadSegments(ctx, manifest, (key) => (missingSegment = key), opts.policy, onIndex, opts.memtableKeys, opts.keyHeads);
  if (tree === undefined) {
    if (await changed()) return undefined;
    throw segmentCorrupted(missingSegment, `it is missing, but manifest ${manifest.id} (the newest) lists it`);
  }
  // A state not handed out (the store changed under the load, or it is damaged) stops merging in idle turns.
  let loaded = false;
  try {
    let delta: DeltaMap | undefined = opts.trackDelta ? new ChangedKeys() : undefined;
    const arena = opts.policy === undefined ? undefined : new ValueArena();
    // Listed before the walk: a checkpoint writes its segments only once the WAL they cover is stored, so a
    // segment listed now covers WAL objects the walk will find, unless a newer manifest let them be deleted.
    const segmentKeys = opts.checkSegments ? await listKeys(ctx.store, `${ctx.prefix}seg/`, ctx.retry) : undefined;
    const walk = await walkWal(ctx, newWalk(manifest.walNext), (ops) => {
      if (delta !== undefined && !delta.hasRoomFor(ops)) delta = undefined;
      applyOps(tree, ops, delta, opts.policy, arena);
      if (delta !== undefined && deltaOverflows(delta, tree.size)) delta = undefined;
    });
    if (walk.vanished) return undefined;
    const gap = await explainGap(ctx, walk);
    if (gap === "vanished") return undefined;
    if (gap !== undefined) {
      if (await changed()) return undefined;
      throw missingWalError(ctx, walk.pos, gap);
    }
    const unexplained = await findUnexplained(ctx, manifest, walk, segmentKeys);
    if (unexplained !== undefined) {
      if (await changed()) return undefined;
      throw new StoreCorruptedError(unexplained.key, unexplained.detail);
    }
    // A checkpoint publishes before it deletes: a manifest listing taken after
    // the WAL listing shows any checkpoint that removed WAL objects we needed.
    const end = await newerOrGoneNow();
    if (end.newest !== undefined ? end.newest.walNext > walk.pos : end.gone) return undefined;
    // Short of a WAL object the served state replayed: durable objects stay until a newer manifest covers
    // them, so the walk's listing missed it.
    if (opts.floor !== undefined && walk.pos < opts.floor.walPos) return undefined;
    loaded = true;
    return { manifest, tree, walk, delta: opts.trackDelta ? delta : undefined, indexes };
  } finally {
    if (!loaded) tree.stopIdleMerges();
  }
}

/** The refusal for a WAL object deleted from the middle of the log. */
export function missingWalError(ctx: StoreContext, seq: number, why: string): StoreCorruptedError {
  return new StoreCorruptedError(
    walKey(ctx.prefix, seq),
    `WAL sequence ${seq} is missing from the middle of the log (${why}); the commits in it were acknowledged, so opening would lose them and everything after`,
  );
}
