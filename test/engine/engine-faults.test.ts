/**
 * @module Engine under store failures (poisoning after retries run out, transient
 * faults, failures after landing) and against corrupted or newer-format
 * objects.
 */
import { MANIFEST_FORMAT_VERSION } from "../../runtime/engine/manifest.js";
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, MemoryStore, StoreCorruptedError, UnsupportedFormatError, WriteBatch, withFaults } from "taquba";
import { InjectedFaultError } from "taquba/testing";
import { futureManifest } from "../support/future-format.js";

const enc = (s: string) => new TextEncoder().encode(s);
const retry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 };

async function objectKeys(store: MemoryStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}

/** Rewrites a stored object through `edit` (the memory store lets a plain put overwrite). */
async function tamper(store: MemoryStore, key: string, edit: (b: Uint8Array) => Uint8Array): Promise<void> {
  const found = await store.get(key);
  if (!found) throw new Error(`no object ${key}`);
  await store.put(key, edit(found.body));
}

describe("engine poisoning", () => {
  it("a WAL put that fails after its retries rejects pending and later commits; reopen recovers the durable state", async () => {
    const inner = new MemoryStore();
    const faulty = withFaults(inner, { failureRate: 0, ops: ["put"], failAfterWriteRate: 0 });
    const engine = await Engine.open(faulty, { retry });
    for (let i = 0; i < 5; i++) await engine.commit(new WriteBatch().put(`ok/${i}`, enc("v")));

    faulty.failureRate = 1;
    const pending = [0, 1, 2].map((i) => engine.commit(new WriteBatch().put(`lost/${i}`, enc("v")).put(`lost2/${i}`, enc("v"))));
    for (const p of pending) {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ClosedError);
      expect((err as ClosedError).cause).toBeDefined();
      expect((err as Error).message).toMatch(/injected fault/);
    }
    expect(engine.closed).toBe(true);
    await expect(engine.commit(new WriteBatch().put("later", enc("v")))).rejects.toBeInstanceOf(ClosedError);
    expect(engine.has("later")).toBe(false);
    await engine.close();

    faulty.failureRate = 0;
    const reopened = await Engine.open(inner);
    expect([...reopened.scan()].map(([k]) => k)).toEqual(["ok/0", "ok/1", "ok/2", "ok/3", "ok/4"]);
    await reopened.close();
  });

  it("transient failures, including puts that fail after landing, are retried without loss", async () => {
    const inner = new MemoryStore();
    const faulty = withFaults(inner, { failureRate: 0.3, seed: 7, failAfterWriteRate: 0.5 });
    const engine = await Engine.open(faulty, { retry: { attempts: 12, baseDelayMs: 1, maxDelayMs: 2 }, checkpointWalObjects: 10 });
    const commits: Promise<void>[] = [];
    for (let i = 0; i < 60; i++) {
      commits.push(engine.commit(new WriteBatch().put(`k/${String(i).padStart(3, "0")}`, enc(String(i)))));
      if (i % 7 === 0) await commits[commits.length - 1];
    }
    await Promise.all(commits);
    await engine.checkpoint();
    await engine.close();
    expect(faulty.injected).toBeGreaterThan(0);
    faulty.failureRate = 0;
    const reopened = await Engine.open(inner);
    expect([...reopened.scan()]).toHaveLength(60);
    await reopened.close();
  });

  it("random put failures never leave a batch half applied, and every acknowledged commit survives", async () => {
    for (const seed of [1, 2, 3]) {
      const inner = new MemoryStore();
      const faulty = withFaults(inner, { failureRate: 0, seed, ops: ["put"] });
      const engine = await Engine.open(faulty, { retry, flushIntervalMs: 0, checkpointWalObjects: 4 });
      faulty.failureRate = 0.5;
      const acked: number[] = [];
      const all: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        all.push(
          engine.commit(new WriteBatch().put(`a/${i}`, enc("x")).put(`b/${i}`, enc("y"))).then(
            () => acked.push(i),
            () => {},
          ),
        );
        // Let each commit go out in a WAL object of its own, so failures fall between commits.
        await new Promise<void>((r) => setImmediate(r));
      }
      await Promise.all(all);
      expect(engine.stats.walPuts).toBeGreaterThan(1);
      expect(faulty.injected).toBeGreaterThan(0);
      await engine.close();
      faulty.failureRate = 0;
      const reopened = await Engine.open(inner);
      for (const i of acked) expect(reopened.has(`a/${i}`)).toBe(true);
      for (let i = 0; i < 40; i++) expect(reopened.has(`a/${i}`)).toBe(reopened.has(`b/${i}`));
      await reopened.close();
    }
  });

  it("an injected fault is what the cause carries", async () => {
    const faulty = withFaults(new MemoryStore(), { failureRate: 0, ops: ["put"], failAfterWriteRate: 0 });
    const engine = await Engine.open(faulty, { retry });
    faulty.failureRate = 1;
    const err = await engine.commit(new WriteBatch().put("a", enc("1"))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClosedError);
    expect((err as ClosedError).cause).toBeDefined();
    const root = ((err as ClosedError).cause as Error).cause;
    expect(root).toBeInstanceOf(InjectedFaultError);
    await engine.close().catch(() => undefined);
    expect(engine.closed).toBe(true);
  });
});

describe("engine corruption detection", () => {
  async function storeWithHistory(checkpoint: boolean): Promise<MemoryStore> {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    for (let i = 0; i < 20; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc(`value ${i}`)));
    if (checkpoint) await engine.checkpoint();
    await engine.commit(new WriteBatch().put("tail", enc("t")));
    await engine.close();
    return store;
  }

  const flip = (b: Uint8Array, at: number) => {
    const c = b.slice();
    c[at] = c[at]! ^ 0x40;
    return c;
  };

  it("an altered or truncated WAL object fails open with its name", async () => {
    for (const edit of [(b: Uint8Array) => flip(b, b.length >> 1), (b: Uint8Array) => b.slice(0, b.length - 3), () => new Uint8Array(0)]) {
      const store = await storeWithHistory(false);
      const walKeys = await objectKeys(store, "wal/");
      // The tail object too: puts are atomic, so a short tail is corruption, not a torn write.
      const victim = walKeys[walKeys.length - (edit.length === 0 ? 1 : 5)]!;
      await tamper(store, victim, edit);
      const err = await Engine.open(store).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreCorruptedError);
      expect((err as StoreCorruptedError).objectKey).toBe(victim);
    }
  });

  it("an altered segment fails open with its name", async () => {
    const store = await storeWithHistory(true);
    const [seg] = await objectKeys(store, "seg/");
    await tamper(store, seg!, (b) => flip(b, 10));
    const err = await Engine.open(store).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe(seg);
    // The footer and index are checked too.
    const store2 = await storeWithHistory(true);
    const [seg2] = await objectKeys(store2, "seg/");
    await tamper(store2, seg2!, (b) => flip(b, b.length - 30));
    await expect(Engine.open(store2)).rejects.toBeInstanceOf(StoreCorruptedError);
  });

  it("a manifest from an unknown future format fails open clearly", async () => {
    const store = await storeWithHistory(true);
    const manifests = await objectKeys(store, "manifest/");
    const newest = manifests[manifests.length - 1]!;
    const original = (await store.get(newest))!.body;
    // A version field altered without the checksum a newer format writes over it is damage, not a newer taquba.
    // (An older version too: the checksum it reads is the body's alone, not the one stored.)
    for (const version of [99, MANIFEST_FORMAT_VERSION + 1, MANIFEST_FORMAT_VERSION - 1, 0]) {
      await tamper(store, newest, (b) => {
        const c = Uint8Array.from(b);
        c[4] = version;
        return c;
      });
      const damaged = await Engine.open(store).catch((e: unknown) => e);
      expect(damaged, `version ${version}`).toBeInstanceOf(StoreCorruptedError);
      expect((damaged as Error).message).toContain(newest);
      await store.put(newest, original);
    }
    await tamper(store, newest, (b) => futureManifest(b, 99));
    const err = await Engine.open(store).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedFormatError);
    expect((err as Error).message).toMatch(/version 99/);
    // Nothing was written by the failed open.
    expect(await objectKeys(store, "manifest/")).toEqual(manifests);
  });

  it("an altered manifest fails open with its name", async () => {
    const store = await storeWithHistory(true);
    const manifests = await objectKeys(store, "manifest/");
    const newest = manifests[manifests.length - 1]!;
    await tamper(store, newest, (b) => flip(b, b.length - 2));
    const err = await Engine.open(store).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe(newest);
  });
});
