/**
 * @module What `Queue.open` checks before its first store request: bad
 * engine options (its own `flushIntervalMs` and `recordCacheBytes`, and
 * `engineOptions`) are refused with a `ValidationError` that names them,
 * and the store sees no request at all, not even the removal of leftover
 * temporary files or the read of the shard placement. Options are read
 * once: what is not an option (not an object, a getter that throws, a
 * Proxy, a logger that is a string) is refused the same way, and a getter
 * answering differently on a second read cannot slip past the checks.
 */
import { describe, expect, it } from "vitest";
import {
  MemoryStore,
  Queue,
  ValidationError,
  type ListedObject,
  type ListOptions,
  type ObjectStore,
  type OpenOptions,
  type PutOptions,
  type StoredObject,
} from "taquba";

/** A MemoryStore that records every request made of it, leftover removals included. */
class RecordingStore implements ObjectStore {
  readonly requests: string[] = [];
  readonly #inner = new MemoryStore();

  get(key: string): Promise<StoredObject | null> {
    this.requests.push(`get ${key}`);
    return this.#inner.get(key);
  }

  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    this.requests.push(`getRange ${key}`);
    return this.#inner.getRange(key, offset, length);
  }

  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    this.requests.push(`put ${key}`);
    return this.#inner.put(key, body, opts);
  }

  delete(key: string): Promise<void> {
    this.requests.push(`delete ${key}`);
    return this.#inner.delete(key);
  }

  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    this.requests.push(`list ${prefix}`);
    return this.#inner.list(prefix, opts);
  }

  removeLeftovers(prefix: string): Promise<number> {
    this.requests.push(`removeLeftovers ${prefix}`);
    return Promise.resolve(0);
  }
}

/** Bad values of the sizes and intervals a queue hands its engine, and the option each is named by. */
const BAD: ReadonlyArray<readonly [OpenOptions, RegExp]> = [
  [{ engineOptions: { flushIntervalMs: Number.NaN } }, /flushIntervalMs/],
  [{ engineOptions: { flushIntervalMs: -1 } }, /flushIntervalMs/],
  [{ engineOptions: { flushIntervalMs: Number.POSITIVE_INFINITY } }, /flushIntervalMs/],
  // Longer than a timer can wait: it would fire after 1 ms instead.
  [{ engineOptions: { flushIntervalMs: 2 ** 31 } }, /flushIntervalMs/],
  [{ flushIntervalMs: 1e30 }, /flushIntervalMs/],
  [{ flushIntervalMs: -5 }, /flushIntervalMs/],
  [{ engineOptions: { maxWalBytes: 1e30 } }, /maxWalBytes/],
  [{ engineOptions: { maxWalBytes: 0 } }, /maxWalBytes/],
  // Allocated whole when a checkpoint starts: 1e30 would fail every checkpoint, in the background.
  [{ engineOptions: { maxSegmentBytes: 1e30 } }, /maxSegmentBytes/],
  [{ engineOptions: { segmentBlockBytes: Number.NaN } }, /segmentBlockBytes/],
  [{ engineOptions: { checkpointWalObjects: -1 } }, /checkpointWalObjects/],
  [{ engineOptions: { checkpointWalBytes: 1e30 } }, /checkpointWalBytes/],
  [{ engineOptions: { checkpointBacklog: 0.5 } }, /checkpointBacklog/],
  [{ engineOptions: { maxSegmentRuns: Number.NEGATIVE_INFINITY } }, /maxSegmentRuns/],
  [{ engineOptions: { maxInflightWalPuts: 1e30 } }, /maxInflightWalPuts/],
  // One less than the WAL sequence numbers a new writer skips: more would be cut to 63 without a word.
  [{ engineOptions: { maxInflightWalPuts: 64 } }, /maxInflightWalPuts must be .*<= 63, got 64/],
  [{ engineOptions: { walCohorts: 0 } }, /walCohorts must be a whole number >= 1 and <= 16, got 0/],
  [{ engineOptions: { walCohorts: 17 } }, /walCohorts must be .*<= 16, got 17/],
  [{ engineOptions: { prefix: "no-slash" } }, /prefix/],
  [{ engineOptions: { retry: { attempts: 0 } } }, /retry\.attempts/],
  [{ engineOptions: { retry: { maxDelayMs: 1e30 } } }, /retry\.maxDelayMs/],
  [{ engineOptions: { pageValues: { keyPrefixes: ["j/"], cacheBytes: 1e30 } } }, /pageValues\.cacheBytes/],
  [{ engineOptions: { onBackgroundError: "log" as unknown as () => void } }, /onBackgroundError/],
  [{ recordCacheBytes: 1e30 }, /recordCacheBytes/],
  // Sizes and counts are whole numbers: a fraction is refused, not truncated somewhere later.
  [{ recordCacheBytes: 1024.5 }, /recordCacheBytes must be null .*or a whole number of bytes/],
  [{ recordCacheBytes: Number.NaN }, /recordCacheBytes/],
  [{ recordCacheBytes: Number.POSITIVE_INFINITY }, /recordCacheBytes/],
  [{ recordCacheBytes: -1 }, /recordCacheBytes/],
  [{ recordCacheBytes: 2 ** 53 }, /recordCacheBytes/],
  [{ payloadOffloadBytes: 0.5 }, /payloadOffloadBytes/],
  [{ maxPayloadBytes: 1024.5 }, /maxPayloadBytes/],
  [{ engineOptions: { maxWalBytes: 4096.5 } }, /maxWalBytes must be a whole number/],
  [{ engineOptions: { maxInflightWalPuts: 2.5 } }, /maxInflightWalPuts must be a whole number/],
  [{ engineOptions: { checkpointWalObjects: 0.5 } }, /checkpointWalObjects must be a whole number/],
  [{ engineOptions: { checkpointWalBytes: 1024.5 } }, /checkpointWalBytes must be a whole number/],
  [{ engineOptions: { maxSegmentRuns: 1.5 } }, /maxSegmentRuns must be a whole number/],
  [{ engineOptions: { maxSegmentBytes: 4096.5 } }, /maxSegmentBytes must be a whole number/],
  [{ engineOptions: { segmentBlockBytes: 256.5 } }, /segmentBlockBytes must be a whole number/],
  [{ engineOptions: { retry: { attempts: 2.5 } } }, /retry\.attempts must be a whole number/],
  [{ engineOptions: { pageValues: { keyPrefixes: ["j/"], cacheBytes: 0.5 } } }, /pageValues\.cacheBytes must be a whole number/],
  [{ engineOptions: { pageValues: { keyPrefixes: ["j/"], minBytes: 1.5 } } }, /pageValues\.minBytes must be a whole number/],
  [{ engineOptions: { pageValues: { keyPrefixes: ["j/"], readaheadBytes: 1024.5 } } }, /pageValues\.readaheadBytes must be a whole number/],
];

describe("Queue.open checks engine options before any store request", () => {
  it.each(
    BAD.map(
      ([opts, named]) => [JSON.stringify(opts, (_k, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v)), opts, named] as const,
    ),
  )("refuses %s", async (_label, opts, named) => {
    const store = new RecordingStore();
    const err = await Queue.open(store, "q", opts).then(
      (q) => q.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toMatch(named);
    expect(store.requests).toEqual([]);
  });

  it("takes a record cache of -0 bytes as 0, and fractions of milliseconds (a timer floors them)", async () => {
    const queue = await Queue.open(new MemoryStore(), "q", { recordCacheBytes: -0, flushIntervalMs: 0.5 });
    await queue.enqueue("jobs", new Uint8Array([1]));
    expect((await queue.claim("jobs"))?.payload).toEqual(new Uint8Array([1]));
    await queue.close();
  });

  it("lists every bad engine option at once", async () => {
    const store = new RecordingStore();
    const err = (await Queue.open(store, "q", { engineOptions: { maxWalBytes: -1, maxSegmentBytes: 1e30 } }).catch((e: unknown) => e)) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.issues.join("\n")).toMatch(/maxWalBytes[\s\S]*maxSegmentBytes/);
    expect(store.requests).toEqual([]);
  });

  it("opens with the largest values allowed, and the store it made reopens", async () => {
    const store = new RecordingStore();
    const limits = {
      flushIntervalMs: 0,
      engineOptions: { maxWalBytes: 2 ** 30, maxSegmentBytes: 2 ** 30, checkpointWalBytes: Number.MAX_SAFE_INTEGER, maxInflightWalPuts: 63 },
    };
    const queue = await Queue.open(store, "q", limits);
    expect(store.requests.length).toBeGreaterThan(0);
    await queue.enqueue("jobs", new Uint8Array([1]));
    await queue.close();
    const again = await Queue.open(store, "q", limits);
    expect((await again.claim("jobs"))?.payload).toEqual(new Uint8Array([1]));
    await again.close();
  });
});

describe("Queue.open reads its options once, and refuses what is not an option before any store request", () => {
  const throwingGetter = (name: string) =>
    Object.defineProperty({}, name, {
      enumerable: true,
      get() {
        throw new Error(`no ${name} today`);
      },
    }) as OpenOptions;

  it.each([
    ["options that are null", null, /Queue\.open options must be an object, got null/],
    ["options that are a string", "fast", /Queue\.open options must be an object, got "fast" \(a string\)/],
    ["engine options that are a string", { engineOptions: "fast" }, /the engine options must be an object, got "fast" \(a string\)/],
    ["engine options that are null", { engineOptions: null }, /the engine options must be an object, got null/],
    ["a getter that throws", throwingGetter("flushIntervalMs"), /reading OpenOptions\.flushIntervalMs threw: no flushIntervalMs today/],
    ["an engine option getter that throws", { engineOptions: throwingGetter("maxWalBytes") }, /reading maxWalBytes threw/],
    ["queue configs behind a Proxy", { queueConfigs: new Proxy({}, {}) }, /OpenOptions\.queueConfigs must be plain data/],
    ["queue configs that are null", { queueConfigs: null }, /OpenOptions\.queueConfigs must be an object, got null/],
    ["a logger that is a string (every log line would be dropped)", { logger: "pino" }, /OpenOptions\.logger must be an object/],
    ["a clock that is null", { clock: null }, /OpenOptions\.clock must be an object with a now\(\) method, got null/],
    ["an onClosed that is not a function", { onClosed: "exit" }, /OpenOptions\.onClosed must be a function/],
    ["a record cache given as a string", { recordCacheBytes: "1" }, /recordCacheBytes .* got "1" \(a string\)/],
    [
      "a misspelt default queue setting",
      { defaultQueueConfig: { maxAtempts: 3 } },
      /defaultQueueConfig\.maxAtempts is not an option.*did you mean maxAttempts\?/,
    ],
    ["a misspelt setting of one queue", { queueConfigs: { jobs: { visibilityTimeoutMS: 5 } } }, /queueConfigs\.jobs\.visibilityTimeoutMS is not an option/],
    [
      "a misspelt backoff field",
      { queueConfigs: { jobs: { backoff: { baseMs: 1, maxMs: 2, factr: 3 } } } },
      /queueConfigs\.jobs\.backoff\.factr is not an option/,
    ],
    ["a queue's settings that are a number", { queueConfigs: { jobs: 5 } }, /queueConfigs\.jobs must be an object of queue settings, got 5/],
  ])("refuses %s", async (_label, opts, says) => {
    const store = new RecordingStore();
    const err = await Queue.open(store, "q", opts as OpenOptions).then(
      (q) => q.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toMatch(says);
    expect(store.requests).toEqual([]);
  });

  it("a queue setting whose getter answers differently on a second read runs with the answer that was checked", async () => {
    let reads = 0;
    const defaultQueueConfig = {
      get leaseMs() {
        reads++;
        return reads === 1 ? 60_000 : Number.NaN;
      },
    };
    const queue = await Queue.open(new MemoryStore(), "q", { defaultQueueConfig });
    expect(reads).toBe(1);
    await queue.enqueue("jobs", new Uint8Array([1]));
    const job = (await queue.claim("jobs"))!;
    expect(job.lease.expiresAt - job.claimedAt).toBe(60_000);
    await queue.close();
  });
});

describe("Queue.open pages only job records", () => {
  // Any other key is read synchronously (indexes, counters, caller KV): paged, the first such read would fail with ValueNotWarmedError.
  it.each([
    [["u/"], /"u\/"/],
    [["j/", "p/"], /"p\/"/],
    [[""], /got ""/],
    [["j"], /got "j"/],
  ])("refuses keyPrefixes %j before any store request, naming the prefix and the one allowed", async (keyPrefixes, named) => {
    const store = new RecordingStore();
    const err = await Queue.open(store, "q", { engineOptions: { pageValues: { keyPrefixes } } }).then(
      (q) => q.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toMatch(named);
    expect((err as ValidationError).message).toMatch(/starting with "j\/"/);
    expect(store.requests).toEqual([]);
  });

  it("opens with prefixes inside the job records, and caller KV reads back after a checkpoint", async () => {
    const store = new MemoryStore();
    const opts: OpenOptions = { engineOptions: { pageValues: { keyPrefixes: ["j/", "j/0"], minBytes: 0 } } };
    const queue = await Queue.open(store, "q", opts);
    await queue.kvPut("k", new Uint8Array(100).fill(7));
    await queue.enqueue("jobs", new Uint8Array(100).fill(1));
    await queue.close();
    const again = await Queue.open(store, "q", opts);
    expect(await again.kvGet("k")).toEqual(new Uint8Array(100).fill(7));
    expect((await again.claim("jobs"))?.payload).toEqual(new Uint8Array(100).fill(1));
    await again.close();
  });
});
