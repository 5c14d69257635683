/**
 * @module An object store in a local directory.
 *
 * Layout: a key's segments become nested directories, so `wal/0001` is the
 * file `<dir>/wal%2F/0001`. Directories carry the suffix `%2F` (an escaped
 * `/`); object files and directories therefore never share a name, and keys
 * `a` and `a/b` can both exist, as on S3. Segments are escaped so that
 * distinct keys stay distinct files on case-folding and Windows file
 * systems (see file-names.ts): `Order-1` is the file `%4Frder-1`. Temporary files start with `%tmp.`, a name no key maps
 * to, so they are never listed and never collide with an object.
 *
 * Durability: a put writes a temporary file in the target directory with
 * `O_DSYNC` (the write returns once the bytes and the file size are on disk;
 * where the flag does not exist, an fsync follows), moves it into place
 * (`link()` for create-if-absent, which fails when the name exists,
 * `rename()` otherwise), then fsyncs the directory and any directory it had
 * to create before resolving. Puts into one directory share its fsyncs: a
 * put waits for one that started after its own entry changed, so concurrent
 * puts pay for one or two, not one each. A process killed mid-put leaves its
 * temporary file behind; `removeLeftovers` deletes those whose process (the
 * pid in the name) is gone, and a writer calls it at open. So does a process
 * killed while the put thread held the next put's file made ahead (empty,
 * under a temporary name: see `#putThroughThread`). Directories are
 * remembered once made and fsynced; a put that finds one removed makes it
 * again and fsyncs its parent. Not covered: another process removed and a
 * third re-created it, parent not yet fsynced (docs/stores.md; checking
 * would cost a stat per put). The store's own directory is never made again
 * once this store saw it (only checked; what is below it is made without
 * `recursive`, so a removal right after the check fails that mkdir): a put
 * that finds it gone fails (`StoreRequestError`).
 *
 * Cost: a file-system call made through the thread pool costs two thread
 * wake-ups besides the call, and on a loaded machine each waits for a core.
 * A put therefore makes its metadata calls (create, stat, link or rename,
 * close, unlink, opening the directory) on the main thread, where each is a
 * change to the file system's cache and in-memory journal that waits for no
 * disk write, and sends only its two disk waits, the `O_DSYNC` write and the
 * directory fsync, to the pool: two trips in sequence. A get makes three
 * trips (open, stat, read) and closes its file on the main thread before it
 * returns, so no read leaves a descriptor open behind the call.
 */
import { copyBytes } from "../bytes.js";
import { randomBytes } from "node:crypto";
import * as fsSync from "node:fs";
import { constants as fsConstants, type Dirent } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { PreconditionFailedError, StoreRequestError, StoreUnavailableError, TaqubaError, ValidationError } from "../errors.js";
import { decodeSegment, encodeSegment } from "./file-names.js";
import { compareKeys, isWellFormed, validateObjectKey } from "./keys.js";
import { checkRange, checkRangeInto, type ListOptions, type ListedObject, type ObjectStore, type PutOptions, type StoredObject } from "./object-store.js";
import { describeValue, optionFields, readExactOptions } from "../option-values.js";
import { declarePutBodyReleased, isLentBody } from "./put-body.js";
import { declarePutsContend } from "./put-contention.js";
import {
  type PutThread,
  PutThreadFailure,
  type PutThreadPair,
  type PutThreadStat,
  PutThreadStopped,
  PutThreadUnavailable,
  sharedPutThreads,
} from "./local-put-thread.js";
import { declareBuiltInStore } from "./own-state.js";

const DIR_SUFFIX = "%2F";
/** Writes through this flag are on disk when they return (undefined where the platform lacks it: then an fsync follows). */
const O_DSYNC: number | undefined = fsConstants.O_DSYNC;
const TEMP_PREFIX = "%tmp.";

/** Whether a file name in a store directory is a put's temporary file (no key maps to one). */
export function isTemporaryFile(name: string): boolean {
  return name.startsWith(TEMP_PREFIX);
}
/** A put whose directory a concurrent delete removed is retried this many times. */
const MAX_PUT_ATTEMPTS = 5;
/**
 * Reads of one directory a listing makes while objects it read vanish
 * before their turn: each read after the first finds only keys written
 * since, so a writer must keep replacing the objects faster than they are
 * listed to use them all up, and the listing then ends as before.
 */
const MAX_LIST_PASSES = 8;
/** Thrown inside a put when the store's directory, seen before, is gone; `put` reports it with the key. */
const ROOT_REMOVED = new Error("the store's directory was removed");

/**
 * Whether a name is one the earlier layout wrote (every `%` spelled `%25`)
 * with characters the current one escapes. Files the operating system drops
 * into folders (`.DS_Store`, `Thumbs.db`) are not.
 */
function isLegacyName(name: string): boolean {
  if (name.startsWith(".") || name === "Thumbs.db") return false;
  for (let i = name.indexOf("%"); i !== -1; i = name.indexOf("%", i + 1)) if (!name.startsWith("%25", i)) return false;
  return /[^a-z0-9_.%-]/.test(name);
}

function errorCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? (err as { code?: string }).code : undefined;
}

/** One directory entry seen while listing, placed by the key (or key prefix) it stands for. */
interface ListEntry {
  /** Full key of an object, or full prefix ending in `/` of a directory. */
  key: string;
  dir: boolean;
  name: string;
}

/** A directory a put needs: when it exists, and when its entry (and its ancestors') is durable. */
interface KnownDir {
  made: Promise<void>;
  durable: Promise<void>;
  /**
   * Set once `made` (`durable`) fulfilled: a put then goes on without
   * awaiting it, since an await of a settled promise still waits for every
   * microtask queued before it (at a WAL object's landing, the continuations
   * of the commits it released) before the put reaches the disk.
   */
  isMade: boolean;
  isDurable: boolean;
}

/** A running directory fsync and, once someone needs one that starts after it, that next one. */
interface DirSync {
  done: Promise<void>;
  next?: Promise<void>;
}

/** How a `LocalStore` makes its puts. */
export interface LocalStoreOptions {
  /**
   * Create-if-absent puts (the engine's WAL objects) of up to 256 KiB go
   * through one worker thread of the process, which makes the whole put in
   * one trip, whenever that thread is free (default true). It is started by
   * the first such put and costs about 9 MB of resident memory, once per
   * process; false keeps every put on Node's thread pool.
   */
  putThread?: boolean;
  /**
   * A create-if-absent put made while the put thread is busy goes to a
   * second thread instead of the thread pool (default false): another
   * 9 MB or so, once per process, started by the first such put. It pays
   * when two WAL puts are often on their way at once, as with the engine's
   * `walCohorts` at 3 or more; needs `putThread`.
   */
  secondPutThread?: boolean;
}

/**
 * A store whose objects are files under one directory.
 *
 * @example
 * const queue = await Queue.open(new LocalStore("/var/lib/myapp/taquba"), "orders");
 */
export class LocalStore implements ObjectStore {
  // Its methods read private fields, so they work only on the store itself: store checks refuse a wrapper that would call them on itself.
  static {
    declareBuiltInStore(LocalStore.prototype, "LocalStore", (value) => #knownDirs in value);
  }

  /** Absolute path of the store's directory. */
  readonly root: string;
  /** Directories made (or being made) by this store, by absolute path; see `#ensureDir`. */
  #knownDirs = new Map<string, KnownDir>();
  /** The directory fsync running for each directory, and the one callers that came later wait for. */
  #dirSyncs = new Map<string, DirSync>();
  #tempCounter = 0;
  /**
   * Random part of this store's temporary names, drawn once: the pid and the
   * counter tell this store's puts apart, this tells stores of one process
   * (or a process before its pid was reused) apart, without a call into the
   * random source per put.
   */
  readonly #tempTag = randomBytes(6).toString("hex");
  /** The last key directory a put went to, and its path (a run of puts into one directory spells it once). */
  #lastDirKey = "";
  #lastDirPath = "";
  /** The directory of this store's last put through the put thread (a second in a row asks for a file made ahead). */
  #lastThreadDir = "";
  /** The store's directory existed while this store used it: once gone, it is not made again (see `put`). */
  #rootSeen = false;
  /** Make create-if-absent puts in one trip when one is free (the process's threads, shared by its stores), unless turned off. */
  readonly #putThreads: PutThreadPair | undefined;

  /** `dir` is created on the first put if absent. */
  constructor(dir: string, options: LocalStoreOptions = {}) {
    if (typeof dir !== "string" || dir.length === 0 || dir.includes("\0")) {
      throw new ValidationError(`LocalStore needs a directory path, got ${describeValue(dir)}`);
    }
    // Each option read once, as every store's: a getter or Proxy that throws is refused by name, never escapes raw.
    const { putThread = true, secondPutThread = false } = readExactOptions(
      options,
      optionFields<LocalStoreOptions>({ putThread: true, secondPutThread: true }),
      "LocalStoreOptions",
    );
    if (typeof putThread !== "boolean") throw new ValidationError(`LocalStoreOptions.putThread must be true or false, got ${describeValue(putThread)}`);
    if (typeof secondPutThread !== "boolean") {
      throw new ValidationError(`LocalStoreOptions.secondPutThread must be true or false, got ${describeValue(secondPutThread)}`);
    }
    if (secondPutThread && !putThread) {
      throw new ValidationError("LocalStoreOptions.secondPutThread needs putThread: a second put thread beside none; drop one of the two");
    }
    this.#putThreads = putThread ? sharedPutThreads(secondPutThread) : undefined;
    this.root = path.resolve(dir);
    // `put` copies the body before its first await; a subclass may put otherwise, and declares for itself.
    if (new.target === LocalStore) declarePutBodyReleased(this);
    // Every put is a write and syncs on one disk: several in flight slow each other down.
    declarePutsContend(this);
  }

  /** The object's file opened for reading, or null when there is no such object. */
  async #openForRead(key: string): Promise<number | null> {
    try {
      const fd = await openForReading(this.#objectPath(key));
      this.#rootSeen = true;
      return fd;
    } catch (err) {
      if (errorCode(err) === "ENOENT" || errorCode(err) === "ENOTDIR") return null;
      throw this.#mapError(err, key, "get");
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    validateObjectKey(key);
    const fd = await this.#openForRead(key);
    if (fd === null) return null;
    try {
      const stat = await fstatOf(fd);
      // An object's file never changes once under its name (puts replace the file), so its size is final.
      const body = await readFully(fd, 0, Number(stat.size));
      return { body, etag: etagOf(stat) };
    } catch (err) {
      throw this.#mapError(err, key, "get");
    } finally {
      closeQuietly(fd);
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    validateObjectKey(key);
    checkRange(offset, length);
    const fd = await this.#openForRead(key);
    if (fd === null) return null;
    try {
      // Never more than the file holds, whatever length was asked for.
      const size = Number((await fstatOf(fd)).size);
      return await readFully(fd, offset, Math.max(0, Math.min(length, size - offset)));
    } catch (err) {
      throw this.#mapError(err, key, "get");
    } finally {
      closeQuietly(fd);
    }
  }

  async getRangeInto(key: string, offset: number, into: Uint8Array): Promise<number | null> {
    validateObjectKey(key);
    checkRangeInto(offset, into);
    const fd = await this.#openForRead(key);
    if (fd === null) return null;
    try {
      // Each read settles before the next starts, so nothing writes into `into` once this settles.
      return await readInto(fd, offset, into);
    } catch (err) {
      throw this.#mapError(err, key, "get");
    } finally {
      closeQuietly(fd);
    }
  }

  async put(key: string, body: Uint8Array, opts: PutOptions = {}): Promise<{ etag: string }> {
    validateObjectKey(key);
    // The write happens after awaits; a private copy keeps a caller's later
    // mutation of `body` out of the stored object, unless the caller lent it
    // (no mutation before the put settles: see store/put-body.ts).
    const payload = isLentBody(body) ? body : copyBytes(body);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#putOnce(key, payload, opts.ifNoneMatch === "*");
      } catch (err) {
        // Syncs of the directories on its path may still run: a put that failed leaves no descriptor open behind it.
        await this.#dirSyncsEnded();
        if (err === ROOT_REMOVED) throw this.#rootRemoved(key);
        if (err instanceof RootProblem) throw new StoreRequestError(`local put (${this.root})`, key, err.message, err.cause);
        // ENOENT: a concurrent delete removed a directory on our path after
        // we made sure of it. Forget what we knew and build the path again.
        // ENOTDIR: the store's directory was replaced by a file; the retry's check of it says so.
        if ((errorCode(err) === "ENOENT" || errorCode(err) === "ENOTDIR") && attempt < MAX_PUT_ATTEMPTS) {
          // The next attempt checks that the store's own directory is still there (an empty one made
          // in its place would hide the loss of every object it held).
          this.#knownDirs.clear();
          continue;
        }
        throw this.#mapError(err, key, "put");
      }
    }
  }

  #rootRemoved(key: string): StoreRequestError {
    return new StoreRequestError(
      `local put (${this.root})`,
      key,
      "the store's directory was removed while this store was in use (by hand or by another program); it is not made again, since an empty directory in its place would lose every object it held without a word: restore it, or open a store on a new directory",
    );
  }

  async delete(key: string): Promise<void> {
    validateObjectKey(key);
    const file = this.#objectPath(key);
    try {
      await fs.unlink(file);
    } catch (err) {
      if (errorCode(err) === "ENOENT" || errorCode(err) === "ENOTDIR") return;
      throw this.#mapError(err, key, "delete");
    }
    let dir = path.dirname(file);
    try {
      await this.#syncNearest(dir);
    } catch (err) {
      throw this.#mapError(err, key, "delete");
    }
    // Remove directories the delete left empty, bottom up, never the root.
    // rmdir refuses a non-empty directory, so a concurrent put loses nothing:
    // at worst it retries after ENOENT.
    const rootPrefix = this.root.endsWith(path.sep) ? this.root : this.root + path.sep;
    while (dir !== this.root && dir.startsWith(rootPrefix)) {
      // The put thread's file made ahead for the next put into it would keep it from being empty.
      this.#putThreads?.releaseSpare(dir);
      try {
        await fs.rmdir(dir);
      } catch {
        break;
      }
      this.#knownDirs.delete(dir);
      dir = path.dirname(dir);
    }
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    // No key contains NUL or a lone surrogate; the file system would reject the one, and the other
    // would find the directory of U+FFFD in its place and list keys that do not exist.
    if (prefix.includes("\0") || !isWellFormed(prefix)) return;
    const startAfter = opts.startAfter;
    // Go straight to the directory of the prefix's complete segments; only
    // the last, partial segment needs filtering.
    const cut = prefix.lastIndexOf("/") + 1;
    const dirKey = prefix.slice(0, cut);
    const dirPath = dirKey === "" ? this.root : this.#dirPath(dirKey.slice(0, -1).split("/"));
    yield* this.#walk(dirPath, dirKey, prefix, startAfter);
  }

  async removeLeftovers(prefix: string): Promise<number> {
    const cut = prefix.lastIndexOf("/") + 1;
    const dirKey = prefix.slice(0, cut);
    if (prefix.includes("\0")) return 0;
    try {
      return await removeDeadTemps(dirKey === "" ? this.root : this.#dirPath(dirKey.slice(0, -1).split("/")));
    } catch (err) {
      throw this.#mapError(err, prefix, "removal of leftovers");
    }
  }

  /**
   * Lists one directory, sorted by key, descending into subdirectories as
   * their turn comes. An object read from the directory and deleted before
   * its turn is left out (a listing is not a snapshot); when one was, the
   * directory is read again for the keys after the last one given, since a
   * writer that deletes objects may have written newer ones meanwhile (the
   * engine deletes a manifest only once three newer ones exist, so a listing
   * that lost every manifest it read must still find the newest).
   */
  async *#walk(dirPath: string, dirKey: string, prefix: string, startAfter: string | undefined): AsyncGenerator<ListedObject> {
    let after = startAfter;
    for (let pass = 0; pass < MAX_LIST_PASSES; pass++) {
      const entries = await this.#readListed(dirPath, dirKey, prefix, after);
      if (entries === undefined) return;
      let vanished = false;
      for (const entry of entries) {
        const entryPath = path.join(dirPath, entry.name);
        if (entry.dir) {
          for await (const o of this.#walk(entryPath, entry.key, prefix, after)) {
            after = o.key;
            yield o;
          }
          continue;
        }
        try {
          const stat = await fs.stat(entryPath);
          after = entry.key;
          yield { key: entry.key, size: stat.size };
        } catch (err) {
          if (errorCode(err) !== "ENOENT") throw this.#mapError(err, entry.key, "list");
          vanished = true;
        }
      }
      if (!vanished) return;
    }
  }

  /** The entries of one directory that a listing of `prefix` after `startAfter` gives, sorted by key; undefined when it is gone. */
  async #readListed(dirPath: string, dirKey: string, prefix: string, startAfter: string | undefined): Promise<ListEntry[] | undefined> {
    let dirents: Dirent[];
    try {
      dirents = await fs.readdir(dirPath, { withFileTypes: true });
    } catch (err) {
      if (errorCode(err) === "ENOENT" || errorCode(err) === "ENOTDIR") return undefined;
      throw this.#mapError(err, prefix, "list");
    }
    if (dirPath === this.root) this.#rootSeen = true;
    const entries: ListEntry[] = [];
    for (const d of dirents) {
      const isDir = d.isDirectory();
      if (isDir !== d.name.endsWith(DIR_SUFFIX)) continue;
      const segment = decodeSegment(isDir ? d.name.slice(0, -DIR_SUFFIX.length) : d.name);
      if (segment === null && !d.name.startsWith(TEMP_PREFIX) && isLegacyName(isDir ? d.name.slice(0, -DIR_SUFFIX.length) : d.name)) {
        // Written before names were escaped for case-folding file systems: refusing beats listing it as empty.
        throw new ValidationError(
          `the store directory ${this.root} holds "${path.join(dirPath, d.name)}", a file name from the layout before keys were escaped for case-insensitive file systems; copy the data into a fresh directory through an older LocalStore and this one (list and get from the old, put into the new)`,
        );
      }
      if (segment === null || segment === "") continue;
      const key = dirKey + segment + (isDir ? "/" : "");
      if (isDir) {
        // A directory matters when its keys can start with the prefix and
        // some of them can sort after startAfter.
        if (!key.startsWith(prefix) && !prefix.startsWith(key)) continue;
        if (startAfter !== undefined && compareKeys(key, startAfter) <= 0 && !startAfter.startsWith(key)) continue;
      } else {
        if (!key.startsWith(prefix)) continue;
        if (startAfter !== undefined && compareKeys(key, startAfter) <= 0) continue;
      }
      entries.push({ key, dir: isDir, name: d.name });
    }
    entries.sort((a, b) => compareKeys(a.key, b.key));
    return entries;
  }

  /**
   * One attempt at the put. A create-if-absent put into a directory already
   * made, with a put thread free for it, goes straight to the thread: no
   * async function of its own between the caller's await and the thread's
   * answer (each would add a promise and microtasks per put on the main
   * thread). Any other put goes through `#putAwaitingDir`.
   */
  #putOnce(key: string, body: Uint8Array, createOnly: boolean): Promise<{ etag: string }> {
    if (createOnly && this.#putThreads !== undefined) {
      const slash = key.lastIndexOf("/");
      const dir = this.#putDirPath(slash === -1 ? "" : key.slice(0, slash));
      const known = this.#ensureDir(dir);
      if (known.isMade) {
        const thread = this.#putThreads.free(body.length, dir);
        if (thread !== undefined) return this.#putThroughThread(thread, key, body, dir, known, inDir(dir, encodeSegment(key.slice(slash + 1))));
      }
    }
    return this.#putAwaitingDir(key, body, createOnly);
  }

  /** `#putOnce` once the key's directory is made: through a put thread if one is free (create-if-absent), else the pool. */
  async #putAwaitingDir(key: string, body: Uint8Array, createOnly: boolean): Promise<{ etag: string }> {
    const slash = key.lastIndexOf("/");
    const dir = this.#putDirPath(slash === -1 ? "" : key.slice(0, slash));
    const known = this.#ensureDir(dir);
    if (!known.isMade) await known.made;
    const target = inDir(dir, encodeSegment(key.slice(slash + 1)));
    const thread = createOnly ? this.#putThreads?.free(body.length, dir) : undefined;
    if (thread !== undefined) return this.#putThroughThread(thread, key, body, dir, known, target);
    const temp = this.#tempName(dir);
    // The metadata calls (create, stat, link, close, unlink) run on the main thread: each changes the
    // file system's cache and its journal in memory and waits for no disk write, so a trip to the thread
    // pool (two thread wake-ups, often the larger cost) would cost more than the call. The two waits for
    // the disk, the O_DSYNC write and the directory fsync, go to the pool.
    const fd = fsSync.openSync(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (O_DSYNC ?? 0), 0o644);
    let stat: { ino: bigint; size: bigint; mtimeNs: bigint };
    try {
      await writeFully(fd, body);
      // With nothing written, O_DSYNC has synced nothing: the new file's inode still needs an fsync.
      if (O_DSYNC === undefined || body.length === 0) await fsyncFd(fd);
      stat = fsSync.fstatSync(fd, { bigint: true });
      // The file is whole and on disk: its final name may point at it now.
      this.#moveIntoPlace(temp, target, key, createOnly);
    } catch (err) {
      closeQuietly(fd);
      unlinkQuietly(temp);
      throw err;
    }
    closeQuietly(fd);
    // The temporary name needs no durability (leftovers are removed at open).
    if (createOnly) unlinkQuietly(temp);
    try {
      await Promise.all([this.#syncDir(dir), known.durable]);
    } catch (err) {
      // The object is in place: never retried from here (the retry would put it back after a
      // delete, or answer a create-if-absent that happened with PreconditionFailedError).
      if (errorCode(err) !== "ENOENT") throw err;
      // A directory holding a file cannot be removed, so the object was deleted since and its
      // emptied directories removed; whatever of the path still exists is synced.
      await this.#syncExisting(dir);
    }
    return { etag: etagOf(stat) };
  }

  /** A temporary file name in `dir` that no other put (of any store or process) uses. */
  #tempName(dir: string): string {
    return inDir(dir, `${TEMP_PREFIX}${process.pid}.${++this.#tempCounter}.${this.#tempTag}`);
  }

  /**
   * The put made in one trip to the put thread (local-put-thread.ts): the
   * same calls as `#putOnce`'s, in its order but for the closes, which come
   * after the answer (the temporary name is removed before the directory
   * fsync in both), so the same crash states, and its errors answered as
   * `#putOnce` answers them.
   *
   * From the second put in a row into one directory (a WAL's stream), each
   * asks the thread to make the next one's temporary file ahead, and writes
   * into the one made for it: one put alone leaves no file behind it.
   */
  async #putThroughThread(thread: PutThread, key: string, body: Uint8Array, dir: string, known: KnownDir, target: string): Promise<{ etag: string }> {
    const spare = thread.spareIn(dir);
    const temp = spare ?? this.#tempName(dir);
    const next = spare !== undefined || this.#lastThreadDir === dir ? this.#tempName(dir) : undefined;
    this.#lastThreadDir = dir;
    let stat: PutThreadStat;
    try {
      stat = await thread.put(temp, target, dir, body, true, next);
    } catch (err) {
      // Nothing was done; the thread is off for good, so this put and later ones go through the pool.
      if (err instanceof PutThreadUnavailable) return this.#putAwaitingDir(key, body, true);
      if (err instanceof PutThreadStopped) {
        // Linked or not, the temporary name can go (a second name of the object's file at most).
        unlinkQuietly(temp);
        throw new StoreUnavailableError(
          `local put (${this.root})`,
          key,
          err,
          "retry the put (a create-if-absent retry may find the object written, and say so); later puts of this process go through the thread pool",
        );
      }
      if (!(err instanceof PutThreadFailure)) throw err;
      const error = err.error;
      if (err.inPlace === undefined) {
        if (errorCode(error) === "EEXIST" && (error as { syscall?: string }).syscall === "link") throw new PreconditionFailedError(key);
        throw error;
      }
      // In place, the directory fsync failed: as in `#putOnce`, never retried; a removed directory means a delete came since.
      if (errorCode(error) !== "ENOENT") throw error;
      await this.#syncExisting(dir);
      stat = err.inPlace;
    }
    if (known.isDurable) return { etag: etagOf(stat) };
    try {
      await known.durable;
    } catch (err) {
      if (errorCode(err) !== "ENOENT") throw err;
      await this.#syncExisting(dir);
    }
    return { etag: etagOf(stat) };
  }

  /**
   * Syncs `dir`, or, when a concurrent delete removed it (emptied), the
   * nearest ancestor that still exists: the removal of what held the entry
   * is then the change to make durable.
   */
  async #syncNearest(dir: string): Promise<void> {
    for (;;) {
      try {
        return await this.#syncDir(dir);
      } catch (err) {
        if (errorCode(err) !== "ENOENT" || dir === this.root || !dir.startsWith(this.root)) throw err;
        dir = path.dirname(dir);
      }
    }
  }

  /** Syncs each directory from `dir` up to the store's own that still exists, and the store's parent. */
  async #syncExisting(dir: string): Promise<void> {
    for (let d = dir; ; d = path.dirname(d)) {
      await this.#syncDir(d).catch((err: unknown) => {
        if (errorCode(err) !== "ENOENT") throw err;
      });
      if (d === this.root || !d.startsWith(this.root)) break;
    }
    await fsyncDir(path.dirname(this.root));
  }

  /** Gives the temporary file its final name: `link()` fails when the name exists, `rename()` replaces. */
  #moveIntoPlace(temp: string, target: string, key: string, createOnly: boolean): void {
    if (!createOnly) {
      fsSync.renameSync(temp, target);
      return;
    }
    try {
      fsSync.linkSync(temp, target);
    } catch (err) {
      if (errorCode(err) === "EEXIST") throw new PreconditionFailedError(key);
      throw err;
    }
  }

  /** Resolves once the directory syncs running now have ended, each either way (a failure is reported where it is awaited). */
  async #dirSyncsEnded(): Promise<void> {
    await Promise.allSettled([...this.#dirSyncs.values()].map((sync) => sync.next ?? sync.done));
  }

  /**
   * Resolves once an fsync of `dir` that started after this call has
   * finished, so every entry changed before the call is durable. Concurrent
   * callers share fsyncs: while one runs, later callers all wait for the
   * single one that starts when it ends.
   */
  #syncDir(dir: string): Promise<void> {
    const running = this.#dirSyncs.get(dir);
    if (running === undefined) return this.#startDirSync(dir);
    running.next ??= running.done.then(
      () => this.#startDirSync(dir),
      () => this.#startDirSync(dir),
    );
    return running.next;
  }

  #startDirSync(dir: string): Promise<void> {
    const done = fsyncDir(dir);
    const entry: DirSync = { done };
    this.#dirSyncs.set(dir, entry);
    const forget = () => {
      if (this.#dirSyncs.get(dir) === entry) this.#dirSyncs.delete(dir);
    };
    done.then(forget, forget);
    return done;
  }

  /**
   * Makes `dir` and its missing ancestors exist. `made` resolves once they
   * exist, `durable` once each has a durable entry in its parent: the fsyncs
   * of the parents start as soon as each directory is made, so a put into a
   * new directory writes its file while they run instead of after them.
   */
  #ensureDir(dir: string): KnownDir {
    const known = this.#knownDirs.get(dir);
    if (known) return known;
    let entry: KnownDir;
    if (dir === this.root) {
      // Once seen, only checked: every directory below is made without
      // `recursive`, so one removed after this check fails that mkdir
      // (ENOENT, and the retry finds it gone) instead of being made again.
      const made = this.#rootSeen
        ? exists(dir).then(async (found) => {
            if (!found) throw ROOT_REMOVED;
            // Replaced by a file (or a link to one): what is below it cannot be made.
            const problem = await rootProblem(dir);
            if (problem !== undefined) throw problem;
          })
        : fs.mkdir(dir, { recursive: true }).then(
            () => {
              this.#rootSeen = true;
            },
            async (err: unknown) => {
              throw (await rootProblem(dir)) ?? err;
            },
          );
      entry = { made, durable: made.then(() => this.#syncDir(path.dirname(dir))), isMade: false, isDurable: false };
    } else {
      const parent = path.dirname(dir);
      const above = this.#ensureDir(parent);
      const made = above.made.then(() =>
        fs.mkdir(dir).then(
          () => undefined,
          (err: unknown) => {
            if (errorCode(err) !== "EEXIST") throw err;
          },
        ),
      );
      // Also when it existed: whoever made it may not have synced yet.
      entry = {
        made,
        durable: made.then(() => Promise.all([this.#syncDir(parent), above.durable])).then(() => undefined),
        isMade: false,
        isDurable: false,
      };
    }
    this.#knownDirs.set(dir, entry);
    const forget = () => {
      if (this.#knownDirs.get(dir) === entry) this.#knownDirs.delete(dir);
    };
    // Either promise may fail before a put awaits it; the put that awaits it reports the failure.
    entry.made.then(() => {
      entry.isMade = true;
    }, forget);
    entry.durable.then(() => {
      entry.isDurable = true;
    }, forget);
    return entry;
  }

  /**
   * The directory that holds the keys under `prefix` (a key prefix ending
   * in "/"), for watching it with `fs.watch`; it may not exist yet.
   */
  directoryOf(prefix: string): string {
    if (prefix === "") return this.root;
    if (!prefix.endsWith("/")) throw new ValidationError(`a directory prefix ends with "/", got ${describeValue(prefix)}`);
    validateObjectKey(`${prefix}x`);
    return this.#dirPath(prefix.slice(0, -1).split("/"));
  }

  /** The directory of the keys under `dirKey` (a key's part before its last "/", "" for the store's own). */
  #putDirPath(dirKey: string): string {
    if (dirKey !== this.#lastDirKey || this.#lastDirPath === "") {
      this.#lastDirPath = dirKey === "" ? this.root : this.#dirPath(dirKey.split("/"));
      this.#lastDirKey = dirKey;
    }
    return this.#lastDirPath;
  }

  #dirPath(segments: readonly string[]): string {
    return path.join(this.root, ...segments.map((s) => encodeSegment(s) + DIR_SUFFIX));
  }

  #objectPath(key: string): string {
    const segments = key.split("/");
    return path.join(this.#dirPath(segments.slice(0, -1)), encodeSegment(segments[segments.length - 1]!));
  }

  /**
   * File-system failures become `StoreUnavailableError`, so callers handle
   * every store alike; those no retry can fix (a refused permission, a
   * read-only file system) become `StoreRequestError`.
   */
  #mapError(err: unknown, key: string, operation = "access"): unknown {
    if (err instanceof TaqubaError) return err;
    const code = errorCode(err);
    if (code === "ENAMETOOLONG") return nameTooLong(key, this.#objectPath(key), this.root);
    if (code !== undefined && REFUSALS.has(code)) {
      const where = (err as { path?: unknown }).path;
      return new StoreRequestError(
        `local ${operation} (${this.root})`,
        key,
        `the file system refused it (${code}${typeof where === "string" ? ` on ${where}` : ""}): ${REFUSALS.get(code)}`,
        err,
      );
    }
    return new StoreUnavailableError(`local ${operation} (${this.root})`, key, err, (code !== undefined && PASSING.get(code)) || undefined);
  }
}

/** Failures a retry may get past, with what to do about them when they last. */
const PASSING: ReadonlyMap<string, string> = new Map([
  ["ENOSPC", "the file system holding the store's directory is full: free space on it (the request can be retried then)"],
  ["EDQUOT", "the disk quota of the user this process runs as is used up: free space or raise the quota (the request can be retried then)"],
  ["EMFILE", "this process has too many files open: raise its limit (ulimit -n) or run fewer requests at once"],
  ["ENFILE", "the system has too many files open: raise its limit or run fewer requests at once"],
]);

/**
 * Deletes, under `dir` and its subdirectories, temporary files of processes
 * that no longer run. The pid is the name's second field; a live process's
 * (this one's included) are left alone, and a live put elsewhere that loses
 * its file anyway (another machine sharing the directory) retries.
 */
async function removeDeadTemps(dir: string): Promise<number> {
  let dirents: Dirent[];
  try {
    dirents = await fs.readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (errorCode(err) === "ENOENT" || errorCode(err) === "ENOTDIR") return 0;
    throw err;
  }
  let removed = 0;
  for (const d of dirents) {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) {
      if (d.name.endsWith(DIR_SUFFIX)) removed += await removeDeadTemps(full);
    } else if (d.name.startsWith(TEMP_PREFIX) && !processRuns(Number(d.name.slice(TEMP_PREFIX.length).split(".")[0]))) {
      await fs.unlink(full).catch(() => undefined);
      removed++;
    }
  }
  return removed;
}

/** File-system errors no retry fixes, and what to do about each. */
const REFUSALS: ReadonlyMap<string, string> = new Map([
  ["EACCES", "permission denied; give the user this process runs as read, write and search (x) permission on the store's directory and everything in it"],
  ...(process.platform === "win32"
    ? [] // There EPERM is also what a file held open by another program (a virus scanner) gives, which passes.
    : ([
        ["EPERM", "operation not permitted; check the permissions and attributes of the store's directory, and that its file system supports hard links"],
      ] as const)),
  ["EROFS", "the file system is mounted read-only; open the store on a writable one"],
  ["ELOOP", "a symbolic link on the path loops back on itself; point it at a directory"],
  // Not passing faults: something not made by this store sits in the store's directory under an object's name.
  ["EISDIR", "a directory stands where the object's file belongs; this store never makes one there, so remove it (or move it out of the store's directory)"],
  ["ENOTDIR", "a file stands where the key's directory belongs; this store never makes one there, so remove it (or move it out of the store's directory)"],
]);

/** Why the store's directory cannot hold objects, in the user's terms; its message goes into a `StoreRequestError`. */
class RootProblem extends Error {}

/**
 * Why `root` cannot be the store's directory (a symlink to nothing, a file,
 * a path through a file, no permission to make it), or undefined when it is
 * a directory or nothing explains the failure. Only called after a failure.
 */
async function rootProblem(root: string): Promise<RootProblem | undefined> {
  const link = await fs.lstat(root).catch(() => undefined);
  if (link?.isSymbolicLink()) {
    const target = path.resolve(path.dirname(root), await fs.readlink(root).catch(() => "?"));
    const reached = await fs.stat(root).then(
      (stat) => ({ stat }),
      (err: unknown) => ({ err }),
    );
    if ("err" in reached) {
      const code = errorCode(reached.err);
      if (code === "ENOENT" || code === "ENOTDIR") {
        return new RootProblem(
          `the store's directory ${root} is a symbolic link to ${target}, which does not exist; create that directory (or point the link at an existing one), or open the store on another directory`,
        );
      }
      if (code === "ELOOP") return new RootProblem(`the store's directory ${root} is a symbolic link that loops back on itself; point it at a directory`);
      return undefined;
    }
    if (!reached.stat.isDirectory()) {
      return new RootProblem(`the store's directory ${root} is a symbolic link to ${target}, which is not a directory; point it at a directory`);
    }
    return undefined;
  }
  if (link !== undefined) {
    return link.isDirectory()
      ? undefined
      : new RootProblem(`the store's directory ${root} is a file, not a directory; move the file away, or open the store on another path`);
  }
  // Absent: the nearest ancestor that exists tells why it could not be made.
  for (let up = path.dirname(root), below = root; up !== below; below = up, up = path.dirname(up)) {
    const stat = await fs.stat(up).catch(() => undefined);
    if (stat === undefined) continue;
    if (!stat.isDirectory()) {
      return new RootProblem(`the store's directory ${root} cannot be made: ${up} is a file, not a directory; open the store on another path`);
    }
    return undefined;
  }
  return undefined;
}

/** Whether a process with this pid runs on this machine (an unreadable pid counts as gone). */
function processRuns(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === "EPERM";
  }
}

/**
 * Why the file of `key` (at `file`) has a name or path too long: escaping
 * makes a file name up to three times its segment's UTF-8 bytes, so the
 * key's own lengths would not explain it.
 */
function nameTooLong(key: string, file: string, root: string): ValidationError {
  // The store's own path may be what is too long (one name over 255 bytes, or the whole near the limit).
  const rootName = root.split(path.sep).find((name) => Buffer.byteLength(name) > 255);
  if (rootName !== undefined) {
    return new ValidationError(
      `the store's directory ${root} has a name of ${Buffer.byteLength(rootName)} bytes in its path, longer than the 255 a local file system allows; open the store on a shorter path`,
    );
  }
  const segments = key.split("/");
  const names = segments.map((s, i) => encodeSegment(s) + (i < segments.length - 1 ? DIR_SUFFIX : ""));
  const longest = names.reduce((a, b) => (b.length > a.length ? b : a));
  const what = `object key ${JSON.stringify(key)}`;
  if (longest.length > 255) {
    return new ValidationError(
      `${what} needs a file name of ${longest.length} bytes, longer than the 255 a local file system allows: LocalStore spells each byte of a segment ` +
        'other than a-z, 0-9, ".", "_" and "-" (upper-case letters and non-ASCII characters included) as three characters (%XX); use shorter key segments',
    );
  }
  return new ValidationError(
    `${what} needs a file path of ${Buffer.byteLength(file)} bytes, longer than the local file system allows; use a store directory with a shorter path, or shorter keys`,
  );
}

/**
 * The path of `name` in `dir`, a directory path this store made (resolved,
 * so already normal): `path.join` would normalise it again on every put.
 * `name` is an encoded segment or a temporary name, neither of which holds
 * a separator or is `.` or `..` (a trailing dot is escaped).
 */
function inDir(dir: string, name: string): string {
  return dir.endsWith(path.sep) ? dir + name : dir + path.sep + name;
}

function etagOf(stat: { ino: bigint; size: bigint; mtimeNs: bigint }): string {
  return `"${stat.ino.toString(16)}-${stat.size.toString(16)}-${stat.mtimeNs.toString(16)}"`;
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.stat(p);
    return true;
  } catch (err) {
    if (errorCode(err) === "ENOENT" || errorCode(err) === "ENOTDIR") return false;
    throw err;
  }
}

/** Fsyncs `dir`: the open and close on the main thread (no disk wait), the fsync in the thread pool. */
async function fsyncDir(dir: string): Promise<void> {
  const fd = fsSync.openSync(dir, "r");
  try {
    await fsyncFd(fd);
  } finally {
    closeQuietly(fd);
  }
}

/** The file opened for reading, in the thread pool (a lookup may read directory blocks); its descriptor. */
function openForReading(file: string): Promise<number> {
  return new Promise((resolve, reject) => fsSync.open(file, "r", (err, fd) => (err ? reject(err) : resolve(fd))));
}

/** fstat(2) of an open descriptor with exact sizes and times, in the thread pool. */
function fstatOf(fd: number): Promise<fsSync.BigIntStats> {
  return new Promise((resolve, reject) => fsSync.fstat(fd, { bigint: true }, (err, stat) => (err ? reject(err) : resolve(stat))));
}

/** One read(2) at `position` into `into` from `at`, in the thread pool; how many bytes it read. */
function readAt(fd: number, into: Uint8Array, at: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => fsSync.read(fd, into, at, length, position, (err, read) => (err ? reject(err) : resolve(read))));
}

/** fsync(2) of an open descriptor, in the thread pool. */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsSync.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/** Removes a temporary name whose loss or survival changes nothing (a leftover is removed at open). */
function unlinkQuietly(file: string): void {
  try {
    fsSync.unlinkSync(file);
  } catch {
    // Gone already, or left for `removeLeftovers`.
  }
}

/**
 * Closes a file the caller is done with, on the main thread (a close waits
 * for no disk write), so that a call that read or wrote it ends with its
 * descriptor closed. A failed close loses nothing (writes were synced before).
 */
function closeQuietly(file: number): void {
  try {
    fsSync.closeSync(file);
  } catch {
    // Nothing to do: see above.
  }
}

/** Writes all of `body` from the file's start (one call unless the system writes less), in the thread pool. */
async function writeFully(fd: number, body: Uint8Array): Promise<void> {
  for (let done = 0; done < body.length; ) {
    done += await new Promise<number>((resolve, reject) =>
      fsSync.write(fd, body, done, body.length - done, done, (err, written) => (err ? reject(err) : resolve(written))),
    );
  }
}

/** `length` bytes from `offset`, fewer only when the file ends first. */
/** Reads from `offset` into `into` until it is full or the file ends; how many bytes it read. */
async function readInto(fd: number, offset: number, into: Uint8Array): Promise<number> {
  let filled = 0;
  while (filled < into.byteLength) {
    const bytesRead = await readAt(fd, into, filled, into.byteLength - filled, offset + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

async function readFully(fd: number, offset: number, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let filled = 0;
  while (filled < length) {
    const bytesRead = await readAt(fd, out, filled, length - filled, offset + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === length ? out : out.slice(0, filled);
}
