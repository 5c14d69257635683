/**
 * @module A read-only view of an engine's store, for other processes.
 *
 * It never writes. `open` loads the newest manifest, its segments and the
 * WAL up to the first gap; `refresh()` reads WAL objects written since, or
 * reloads from a newer manifest when a checkpoint replaced the segments.
 * A checkpoint may delete objects between this reader's listing and its
 * reads, or before its WAL listing (the log then seems to end early); the
 * reader lists manifests after the WAL, sees the newer manifest, and starts
 * over from it. A store missing objects that no checkpoint explains fails
 * with `StoreCorruptedError` (see `loadState`). A listing may lag behind
 * the store: a reload starts from the manifest this reader serves or a
 * newer one and loads again when its log replay ends short of what it
 * served, so the reader never moves back.
 */
import { ConstructionGate } from "../internal-construction.js";
import { validateEngineOptions } from "./engine-options.js";
import { optionFields, readExactOptions } from "../option-values.js";
import { ClosedError, StoreUnavailableError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";
import { checkPrefix } from "./layout.js";
import type { Manifest } from "./manifest.js";
import { applyOps } from "./apply-ops.js";
import { explainGap, loadState, newState, readNewestManifest, walkWal, type LoadOptions, type StoreContext, type WalWalk } from "./recovery.js";
import type { RetryPolicy } from "./retry.js";
import type { ScanOptions } from "./scan.js";
import { heldValue, type StateMap } from "./paged-value.js";
import { checkStoreArg } from "../store/store-check.js";

/** Options of `EngineReader.open`. */
export interface EngineReaderOptions {
  /** The prefix the writer was opened with. Default: "". */
  prefix?: string;
  /** Retries of transient store failures. */
  retry?: RetryPolicy;
}

const READER_FIELDS = optionFields<EngineReaderOptions>({ prefix: true, retry: true });

const MAX_RELOADS = 10;

type Loaded = { tree: StateMap; manifest: Manifest; walk: WalWalk };

function sameSegments(a: Manifest, b: Manifest): boolean {
  return a.segments.length === b.segments.length && a.segments.every((s, i) => s.name === b.segments[i]!.name);
}

/** `new EngineReader` is internal: use EngineReader.open(store, options) (see internal-construction.ts). */
const READER_GATE = new ConstructionGate("EngineReader", "use EngineReader.open(store, options)");

/**
 * The durable state of an engine's store, read without taking it over; see
 * the module documentation.
 *
 * @example
 * const reader = await EngineReader.open(store);
 * console.log(reader.get("a/1"));
 * await reader.refresh(); // picks up what the writer made durable since
 */
export class EngineReader {
  /** The store this reader reads. */
  readonly store: ObjectStore;
  readonly #ctx: StoreContext;
  /** Loaded without a page policy: every value is held as bytes. */
  #state: StateMap;
  #manifest: Manifest;
  #walk: WalWalk;
  #closed = false;
  #refreshing: Promise<boolean> | undefined;
  /** The refresh that starts once the one under way ends, shared by every call made meanwhile. */
  #queued: Promise<boolean> | undefined;

  private constructor(ctx: StoreContext, loaded: Loaded) {
    READER_GATE.check();
    this.store = ctx.store;
    this.#ctx = ctx;
    this.#state = loaded.tree;
    this.#manifest = loaded.manifest;
    this.#walk = loaded.walk;
  }

  /** Loads the store's current durable state. The store need not have a writer. */
  static async open(store: ObjectStore, given: EngineReaderOptions = {}): Promise<EngineReader> {
    checkStoreArg("EngineReader.open's store", store);
    // Read once and checked as the writer's are (the prefix, the retry policy's bounds).
    const opts = validateEngineOptions(readExactOptions(given, READER_FIELDS, "EngineReaderOptions") as EngineReaderOptions, "EngineReaderOptions");
    const ctx: StoreContext = { store, prefix: checkPrefix(opts.prefix ?? ""), retry: opts.retry ?? {} };
    const loaded = await loadFresh(ctx);
    return READER_GATE.build(() => new EngineReader(ctx, loaded));
  }

  /** True once `close` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The number of the manifest this view is based on. */
  get manifestId(): number {
    return this.#manifest.id;
  }

  /** The next WAL sequence number this view will read. */
  get walPosition(): number {
    return this.#walk.pos;
  }

  /** The value of `key` as of the last load, or undefined. */
  get(key: string): Uint8Array | undefined {
    const v = this.#state.get(key);
    return v === undefined || v instanceof Uint8Array ? v : heldValue(key, v);
  }

  /** Whether `key` had a value as of the last load. */
  has(key: string): boolean {
    return this.#state.has(key);
  }

  /** Ordered entries; do not `await refresh()` while iterating. */
  *scan(opts: ScanOptions = {}): IterableIterator<[string, Uint8Array]> {
    for (const entry of this.#state.scan(opts)) {
      const v = entry[1];
      yield v instanceof Uint8Array ? (entry as [string, Uint8Array]) : [entry[0], heldValue(entry[0], v)];
    }
  }

  /**
   * Picks up WAL objects and manifests written since the last load, and
   * never hands out a refresh that started before this call: one already
   * under way may have read the store before a commit the caller knows of,
   * so a call made meanwhile waits for it and shares the next one (every
   * call made meanwhile shares that same one). Resolves to whether anything
   * changed since the call.
   */
  refresh(): Promise<boolean> {
    if (this.#closed) return Promise.reject(new ClosedError("the engine reader"));
    if (this.#queued !== undefined) return this.#queued;
    const running = this.#refreshing;
    if (running === undefined) return this.#startRefresh();
    const next = () => {
      this.#queued = undefined;
      return this.#startRefresh();
    };
    // The one under way may have changed the state after this call too: report its change as well.
    this.#queued = running.then(
      (changed) => next().then((more) => changed || more),
      () => next(),
    );
    return this.#queued;
  }

  #startRefresh(): Promise<boolean> {
    // Closed while it waited: the view was dropped, and a walk would refill it with only the newest commits.
    if (this.#closed) return Promise.reject(new ClosedError("the engine reader"));
    const p = this.#doRefresh().finally(() => {
      if (this.#refreshing === p) this.#refreshing = undefined;
    });
    this.#refreshing = p;
    return p;
  }

  async #doRefresh(): Promise<boolean> {
    const before = this.#walk.pos;
    const tree = this.#state;
    // WAL first, manifests after: a checkpoint publishes before it deletes,
    // so a walk cut short by its deletions always meets its manifest below.
    // Kept as each object is passed: a refresh that fails past some objects leaves their commits in the
    // state, and the next one must go on after them, not apply them again over later ones (a key would
    // show an older value beside newer keys, a state no commit order made).
    const walk = await walkWal(
      this.#ctx,
      this.#walk,
      (ops) => applyOps(tree, ops),
      (w) => {
        if (this.#state === tree) this.#walk = { ...w, vanished: false };
      },
    );
    this.#walk = { ...walk, vanished: false };
    const newer = await readNewestManifest(this.#ctx, this.#manifest.id);
    const reload =
      walk.vanished ||
      (newer !== undefined && (!sameSegments(newer, this.#manifest) || newer.walNext > walk.pos)) ||
      (await explainGap(this.#ctx, walk)) !== undefined;
    if (reload) {
      // loadState tells a checkpoint from a deletion, and refuses the latter. Never older than what this view served.
      this.#adopt(await loadFresh(this.#ctx, { manifest: this.#manifest.id, walPos: this.#walk.pos }));
      return true;
    }
    // A writer's opening claim: same segments, nothing new to load.
    if (newer !== undefined) this.#manifest = newer;
    return walk.pos !== before || newer !== undefined;
  }

  #adopt(loaded: Loaded): void {
    this.#state.stopIdleMerges();
    this.#state = loaded.tree;
    this.#manifest = loaded.manifest;
    this.#walk = loaded.walk;
  }

  /** Drops the loaded state; a later `refresh` rejects with `ClosedError`. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#queued?.catch(() => {});
    await this.#refreshing?.catch(() => {});
    this.#state.stopIdleMerges();
    this.#state = newState();
  }
}

/**
 * Loads the newest manifest, its segments and the WAL, starting over when a
 * checkpoint deletes something mid-load, or when the load is older than the
 * `floor` this reader served (a listing that lagged).
 */
async function loadFresh(ctx: StoreContext, floor?: LoadOptions["floor"]): Promise<Loaded> {
  for (let attempt = 0; attempt < MAX_RELOADS; attempt++) {
    const loaded = await loadState(ctx, { trackDelta: false, checkSegments: true, ...(floor === undefined ? {} : { floor }) });
    if (loaded !== undefined) return loaded;
  }
  throw new StoreUnavailableError("load", `${ctx.prefix}manifest/`, new Error(`the store changed under the reader ${MAX_RELOADS} times in a row`));
}
