/**
 * @module Objects deleted out of an engine's store (issue J, items 1, 2, 4):
 * a WAL object from the middle or the start of the log, the newest manifest,
 * every manifest, a listed segment. Each must fail open (writer and reader)
 * with StoreCorruptedError naming what is missing, and a refused open must
 * write no manifest. A crash that left a later WAL object without an earlier
 * one (several puts in flight) must still open, with exactly the
 * acknowledged commits. Runs on LocalStore, MemoryStore with faults and s3rver.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, StoreCorruptedError, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { until } from "../support/until.js";
import { decodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { keysUnder, RETRY, useBackends } from "./backends.js";

const backends = useBackends();
const enc = new TextEncoder();
const walKey = (seq: number) => `wal/${String(seq).padStart(20, "0")}`;
/** No automatic checkpoints: each test decides when the WAL is folded into segments. */
const OPTS = { flushIntervalMs: 0, checkpointWalObjects: 0, retry: RETRY };

/** Commits `n` one-key batches, each awaited so that each is its own WAL object. */
async function commitEach(engine: Engine, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) await engine.commit(new WriteBatch().put(`k/${String(i).padStart(4, "0")}`, enc.encode(String(i))));
}

/** Expects both a writer's and a reader's open to fail naming `what`, and no manifest to have been written. */
async function expectRefused(store: ObjectStore, raw: ObjectStore, what: RegExp): Promise<void> {
  const manifests = await keysUnder(raw, "manifest/");
  const writer = Engine.open(store, OPTS);
  await expect(writer).rejects.toBeInstanceOf(StoreCorruptedError);
  await expect(writer).rejects.toThrow(what);
  await expect(EngineReader.open(store, { retry: RETRY })).rejects.toThrow(what);
  expect(await keysUnder(raw, "manifest/")).toEqual(manifests);
}

describe.each(backends)("missing engine objects on $name", (backend) => {
  it("refuses a WAL object deleted from the middle of the log, naming its sequence", async () => {
    const { store, raw } = await backend.make();
    const engine = await Engine.open(store, OPTS);
    await commitEach(engine, 0, 10);
    await engine.close();
    // A fresh store: fence at 1, commits from 65 on.
    expect(await keysUnder(raw, "wal/")).toEqual([walKey(1), ...Array.from({ length: 10 }, (_, i) => walKey(65 + i))]);
    await raw.delete(walKey(69));
    await expectRefused(store, raw, /WAL sequence 69 is missing/);
  });

  // 64 commits and four refused opens, on s3rver each store call an HTTP exchange served by this process:
  // 1.8 s of CPU, 15 s of wall time at load 21 on two cores. The limit guards against a hang.
  it("tells why a deleted WAL object is no crash: an object too far past it, or one written after it was stored", { timeout: HEAVY_TEST_MS }, async () => {
    const { store, raw } = await backend.make();
    const engine = await Engine.open(store, OPTS);
    // Objects 65..128. A writer never has a put in flight WAL_FENCE_JUMP - 1 = 63 or more past its durable log.
    await commitEach(engine, 0, 64);
    await engine.close();
    const last = await raw.get(walKey(128));
    await raw.delete(walKey(128));
    await raw.delete(walKey(65));
    // 127 is 62 past the gap: near enough for a crash, but it was sealed when 65 was stored.
    await expectRefused(store, raw, /WAL sequence 65 is missing .*WAL object 127 was written when every object up to 126 was stored/);
    await raw.put(walKey(128), last!.body);
    await expectRefused(store, raw, /WAL sequence 65 is missing .*WAL object 128 exists 63 sequence numbers past it, farther than any writer puts ahead/);
  });

  it("refuses when the first WAL object is deleted, and when the first fence is too", async () => {
    const { store, raw } = await backend.make();
    const engine = await Engine.open(store, OPTS);
    await commitEach(engine, 0, 5);
    await engine.close();
    await raw.delete(walKey(65));
    await expectRefused(store, raw, /WAL sequence 65 is missing/);
    await raw.delete(walKey(1));
    await expectRefused(store, raw, /WAL sequence 1 is missing/);
  });

  // On s3rver each store call is an HTTP exchange served by this process: 0.4 s of CPU, 7.9 s of wall time
  // at load 27 on two cores (vitest's default limit is 30 s). The limit guards against a hang.
  it("opens after a crash that left a later WAL object without an earlier one, with exactly the acknowledged commits", { timeout: HEAVY_TEST_MS }, async () => {
    const { store, raw } = await backend.make();
    const gated = new GatedStore(store, (key) => key === walKey(66));
    const crashed = await Engine.open(gated, { ...OPTS, maxInflightWalPuts: 8 });
    await commitEach(crashed, 0, 1); // 65: acknowledged
    const held = crashed.commit(new WriteBatch().put("k/held", enc.encode("x"))); // 66: held in flight
    held.catch(() => {});
    await gated.waitHeld(1);
    const later = crashed.commit(new WriteBatch().put("k/later", enc.encode("y"))); // 67: lands
    later.catch(() => {});
    await until("WAL object 67 lands", async () => (await keysUnder(raw, "wal/")).includes(walKey(67)));
    // The process dies here: 66 never lands, 67 did, neither was acknowledged.
    const engine = await Engine.open(store, OPTS);
    expect([...engine.scan()].map(([k]) => k)).toEqual(["k/0000"]);
    await commitEach(engine, 1, 2);
    await engine.close();
    const reopened = await Engine.open(store, OPTS);
    expect([...reopened.scan()].map(([k]) => k)).toEqual(["k/0000", "k/0001", "k/0002"]);
    await reopened.close();
  });

  // Three opens, one of them eight load attempts, on s3rver served by this process: 0.5-0.65 s of CPU,
  // 4.9-8.4 s of wall time at load 27-28 on two cores. The limit guards against a hang.
  it("an object past a crash's gap, listed but gone when read: retried as a changing store, or refused naming the gap after the claim", {
    timeout: HEAVY_TEST_MS,
  }, async () => {
    const { store, raw } = await backend.make();
    const gated = new GatedStore(store, (key) => key === walKey(66));
    const crashed = await Engine.open(gated, { ...OPTS, maxInflightWalPuts: 8 });
    await commitEach(crashed, 0, 1);
    const held = crashed.commit(new WriteBatch().put("k/held", enc.encode("x")));
    held.catch(() => {});
    await gated.waitHeld(1);
    const later = crashed.commit(new WriteBatch().put("k/later", enc.encode("y")));
    later.catch(() => {});
    await until("WAL object 67 lands", async () => (await keysUnder(raw, "wal/")).includes(walKey(67)));
    // 67 is listed, but reading it finds nothing: always, or once the opening writer published its claim.
    const vanishing = (always: boolean): ObjectStore => {
      let claimed = false;
      return {
        get: (key) => (key === walKey(67) && (always || claimed) ? Promise.resolve(null) : store.get(key)),
        put: (key, body, opts) => {
          if (key.startsWith("manifest/")) claimed = true;
          return store.put(key, body, opts);
        },
        delete: (key) => store.delete(key),
        list: (prefix, opts) => store.list(prefix, opts),
      };
    };
    // Gone from the first read: as if a checkpoint kept deleting under the open, which retries, claims
    // first to stop the checkpoints, then gives up with a retryable StoreUnavailableError. Its claim
    // stays (another opener may have read it and built on it): the newest manifest again, its epoch
    // one higher and nothing else changed; the WAL and the segments are as they were.
    const manifests = await keysUnder(raw, "manifest/");
    const wal = await keysUnder(raw, "wal/");
    const newestBefore = await manifestAt(raw, manifests[manifests.length - 1]!);
    const unavailable = await Engine.open(vanishing(true), OPTS).catch((e: unknown) => e);
    expect(unavailable).toBeInstanceOf(StoreUnavailableError);
    expect((unavailable as StoreUnavailableError).retryable).toBe(true);
    const after = await keysUnder(raw, "manifest/");
    expect(after.slice(0, manifests.length)).toEqual(manifests);
    expect(after.length).toBe(manifests.length + 1);
    const claim = await manifestAt(raw, after[after.length - 1]!);
    expect(claim.epoch).toBe(newestBefore.epoch + 1);
    expect(claim.walNext).toBe(newestBefore.walNext);
    expect(claim.segments).toEqual(newestBefore.segments);
    expect(await keysUnder(raw, "wal/")).toEqual(wal);
    // Readable while loading, gone when the writer walks on after its claim: the gap at 66 is refused, named.
    const err = await Engine.open(vanishing(false), OPTS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe(walKey(66));
    expect((err as Error).message).toMatch(/WAL sequence 66 is missing from the middle of the log \(an object past it vanished while being read\)/);
  });

  it("refuses when the newest manifest is deleted after a checkpoint, with or without later commits", async () => {
    for (const later of [0, 3]) {
      const { store, raw } = await backend.make();
      const engine = await Engine.open(store, OPTS);
      await commitEach(engine, 0, 5);
      await engine.checkpoint();
      await commitEach(engine, 5, later);
      await engine.close();
      const manifests = await keysUnder(raw, "manifest/");
      await raw.delete(manifests[manifests.length - 1]!);
      await expectRefused(store, raw, /missing|deleted/);
    }
  });

  it("refuses when every manifest is deleted while WAL objects and segments exist", async () => {
    const { store, raw } = await backend.make();
    const engine = await Engine.open(store, OPTS);
    await commitEach(engine, 0, 5);
    await engine.checkpoint();
    await engine.close();
    for (const key of await keysUnder(raw, "manifest/")) await raw.delete(key);
    await expectRefused(store, raw, /no manifest does/);
  });

  it("refuses a missing segment without writing a manifest", async () => {
    const { store, raw } = await backend.make();
    const engine = await Engine.open(store, OPTS);
    await commitEach(engine, 0, 5);
    await engine.checkpoint();
    await engine.close();
    const [segment] = await keysUnder(raw, "seg/");
    await raw.delete(segment!);
    await expectRefused(store, raw, new RegExp(`${segment}.*is missing`));
  });
});

/** The manifest stored at `key` (its id is the key's number). */
async function manifestAt(raw: ObjectStore, key: string): Promise<Manifest> {
  const got = await raw.get(key);
  return decodeManifest(key, got!.body, Number(key.slice(key.lastIndexOf("/") + 1)));
}
