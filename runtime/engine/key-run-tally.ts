/**
 * @module What the key runs of a process hold in memory, for benchmarks:
 * off unless `trackKeyRuns()` was called, so a run costs nothing to track
 * otherwise. Runs made while tracking are held weakly; a run the engine
 * dropped counts until the collector frees it, which is when its memory
 * comes back too.
 *
 * Pure bookkeeping: no IO.
 */

/** What a tally reads of a run. */
export interface TalliedRun {
  readonly count: number;
  readonly bytes: Uint8Array;
  readonly blockStarts: Uint32Array;
  readonly memoryBytes: number;
  readonly filterBytes: number;
}

/** Sums over the runs not yet collected. */
export interface KeyRunTally {
  runs: number;
  entries: number;
  /** Bytes of the runs' entry buffers. */
  bytes: number;
  /** Of those, the buffers that are resizable (V8 allocates them itself: not in `arrayBuffers`). */
  resizableRuns: number;
  resizableBytes: number;
  /** Address space those resizable buffers reserve (`maxByteLength`; resident only where written). */
  reservedBytes: number;
  /** Block offsets and Bloom filters. */
  indexBytes: number;
  /** Of those, the Bloom filters. */
  filterBytes: number;
  /** The largest run's entries. */
  largestEntries: number;
}

let tracked: Set<WeakRef<TalliedRun>> | undefined;
let registry: FinalizationRegistry<WeakRef<TalliedRun>> | undefined;

/** Starts tracking the runs made from now on. */
export function trackKeyRuns(): void {
  if (tracked !== undefined) return;
  const set = new Set<WeakRef<TalliedRun>>();
  tracked = set;
  registry = new FinalizationRegistry((ref) => set.delete(ref));
}

/** Called by each run as it is made. */
export function noteKeyRun(run: TalliedRun): void {
  if (tracked === undefined) return;
  const ref = new WeakRef(run);
  tracked.add(ref);
  registry!.register(run, ref);
}

/** Whether a buffer is resizable (ES2024; the configured lib does not declare it). */
function resizable(buf: ArrayBufferLike): { maxByteLength: number } | undefined {
  const b = buf as ArrayBufferLike & { resizable?: boolean; maxByteLength?: number };
  return b.resizable === true ? { maxByteLength: b.maxByteLength! } : undefined;
}

/** Sums over the tracked runs not yet collected (empty when not tracking). */
export function keyRunTally(): KeyRunTally {
  const t: KeyRunTally = {
    runs: 0,
    entries: 0,
    bytes: 0,
    resizableRuns: 0,
    resizableBytes: 0,
    reservedBytes: 0,
    indexBytes: 0,
    filterBytes: 0,
    largestEntries: 0,
  };
  for (const ref of tracked ?? []) {
    const run = ref.deref();
    if (run === undefined) continue;
    t.runs++;
    t.entries += run.count;
    t.bytes += run.bytes.byteLength;
    t.indexBytes += run.memoryBytes - run.bytes.byteLength;
    t.filterBytes += run.filterBytes;
    t.largestEntries = Math.max(t.largestEntries, run.count);
    const r = resizable(run.bytes.buffer);
    if (r !== undefined) {
      t.resizableRuns++;
      t.resizableBytes += run.bytes.buffer.byteLength;
      t.reservedBytes += r.maxByteLength;
    }
  }
  return t;
}

/** The tracked runs not yet collected (for a walk of their keys). */
export function trackedKeyRuns<R extends TalliedRun>(): R[] {
  const out: R[] = [];
  for (const ref of tracked ?? []) {
    const run = ref.deref();
    if (run !== undefined) out.push(run as R);
  }
  return out;
}

/** What a run's filter answered a lookup, and what the run then found (indexes into `FilterProbeCounts.counts`). */
export const FilterOutcome = {
  /** "No", for a key between the run's first and last keys. */
  RejectedInRange: 0,
  /** "No", for a key outside the run's keys (its bounds would have said so too). */
  RejectedOutOfRange: 1,
  /** "Maybe", and the run holds the key. */
  MaybeHeld: 2,
  /** "Maybe", and the run does not hold it: a false positive, which costs a search of one block in memory. */
  MaybeAbsent: 3,
  /** "Maybe" to a caller that only asks (open's check before a kill). */
  AskedMaybe: 4,
  /** "No" to a caller that only asks. */
  AskedRejected: 5,
  /** Not asked: the key sorts outside an ASCII run's first and last keys, which `find` compares first. */
  SkippedOutOfRange: 6,
} as const;
export type FilterOutcome = (typeof FilterOutcome)[keyof typeof FilterOutcome];
const OUTCOMES = 7;

/** Counts per outcome of the lookups of keys starting with one byte. */
export interface FilterProbeCounts {
  /** The key's first character (keys of one family share it: `j`, `p`, ...). */
  readonly first: string;
  readonly counts: readonly number[];
}

/** Per first byte of the looked-up key, counts by `FilterOutcome`; undefined while not counting. */
let probeCounts: Float64Array | undefined;

/** Whether filter probes are counted (checked on every probe, so a plain flag). */
export let countingFilterProbes = false;

/** Starts counting the filter probes of every run, from zero. */
export function countFilterProbes(): void {
  probeCounts = new Float64Array(256 * OUTCOMES);
  countingFilterProbes = true;
}

/** Called by a run on each probe while counting. */
export function noteFilterProbe(firstByte: number, outcome: FilterOutcome): void {
  probeCounts![firstByte * OUTCOMES + outcome]!++;
}

/** The counts so far, per first byte that was looked up at all. */
export function filterProbeCounts(): FilterProbeCounts[] {
  const out: FilterProbeCounts[] = [];
  if (probeCounts === undefined) return out;
  for (let b = 0; b < 256; b++) {
    const counts = Array.from(probeCounts.subarray(b * OUTCOMES, (b + 1) * OUTCOMES));
    if (counts.some((c) => c > 0)) out.push({ first: String.fromCharCode(b), counts });
  }
  return out;
}
