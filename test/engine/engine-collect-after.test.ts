/**
 * @module An incremental checkpoint's garbage collection (the deletes of the
 * WAL objects it covered) runs after it, so the next checkpoint starts when
 * the WAL reaches its trigger rather than when those deletes end; one
 * collection runs at a time and of those waiting only the newest is kept;
 * `checkpoint()` and `close()` still wait for them.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type ListOptions, type ListedObject } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { settlesWithinTurns, turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const retry = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
/** A checkpoint every 2 WAL objects, no backlog bound (commits never wait on checkpoints here). */
const paced = { checkpointWalObjects: 2, checkpointWalBytes: 0, checkpointBacklog: 0, retry };

/** A store whose deletes of WAL objects hang while `holding`, and that counts listings of the WAL. */
class HeldWalDeletes extends MemoryStore {
  holding = false;
  walListings = 0;
  deletesHeld = 0;
  #waiting: Array<() => void> = [];

  override async delete(key: string): Promise<void> {
    if (this.holding && key.startsWith("wal/")) {
      this.deletesHeld++;
      await new Promise<void>((r) => this.#waiting.push(r));
    }
    return super.delete(key);
  }

  override list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    if (prefix === "wal/") this.walListings++;
    return super.list(prefix, opts);
  }

  release(): void {
    this.holding = false;
    for (const r of this.#waiting.splice(0)) r();
  }

  /** The WAL objects the newest manifest covers (below its `walNext`) that are not fences: garbage once it is published. */
  async coveredWal(): Promise<string[]> {
    const manifests: string[] = [];
    for await (const o of super.list("manifest/")) manifests.push(o.key);
    const key = manifests.at(-1)!;
    const m = decodeManifest(key, (await super.get(key))!.body, parseNumberedKey("", "manifest", key)!);
    return (await this.walKeys()).filter((k) => {
      const seq = parseNumberedKey("", "wal", k)!;
      return seq < m.walNext && !m.fences.includes(seq);
    });
  }

  async walKeys(): Promise<string[]> {
    const keys: string[] = [];
    for await (const o of super.list("wal/")) keys.push(o.key);
    return keys;
  }
}

/** Turns until `done()` or a bound of turns; the caller asserts afterwards. */
async function turnsUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 5000 && !done(); i++) await turns(1);
}

/** A state of 100 keys under `s/`, so a checkpoint of a few changes is an incremental one, not a compaction. */
async function seed(engine: Engine): Promise<void> {
  const b = new WriteBatch();
  for (let i = 0; i < 100; i++) b.put(`s/${String(i).padStart(3, "0")}`, enc("seed"));
  await engine.commit(b);
}

/** One commit per WAL object: each awaited before the next is made. */
async function commitEach(engine: Engine, keys: string[]): Promise<void> {
  for (const k of keys) await engine.commit(new WriteBatch().put(k, enc(k)));
}

describe("garbage collection after an incremental checkpoint", () => {
  it("the next checkpoint starts while the previous one's deletes of the WAL hang, and covers the WAL since", async () => {
    const store = new HeldWalDeletes();
    const engine = await Engine.open(store, paced);
    // The first checkpoint (a compaction) and its deletes, to the end.
    await seed(engine);
    await commitEach(engine, ["a/1"]);
    await engine.checkpoint();
    expect(engine.stats.checkpoints).toBe(1);

    store.holding = true;
    await commitEach(engine, ["a/3", "a/4"]);
    await turnsUntil(() => store.deletesHeld > 0);
    expect(engine.stats.checkpoints).toBe(2);
    expect(store.deletesHeld).toBeGreaterThan(0);

    // Two more WAL objects: the trigger again, with the deletes still hanging.
    await commitEach(engine, ["a/5", "a/6"]);
    await turnsUntil(() => engine.stats.checkpoints === 3);
    expect(engine.stats.checkpoints).toBe(3);
    expect(engine.stats.walObjectsSinceCheckpoint).toBeLessThan(2);

    // checkpoint() waits for the deletes too; once they end, no WAL object the manifest covers is left.
    const cp = engine.checkpoint();
    expect(await settlesWithinTurns(cp, 20)).toBe(false);
    store.release();
    await cp;
    const left = await store.walKeys();
    await engine.close();
    const reopened = await Engine.open(store);
    expect([...reopened.scan({ prefix: "a/" })].map(([k]) => k)).toEqual(["a/1", "a/3", "a/4", "a/5", "a/6"]);
    // What is left is the fence marker of this writer (and nothing the reopen had to replay).
    expect(left.length).toBeLessThanOrEqual(1);
    expect(reopened.stats.walObjectsSinceCheckpoint).toBe(0);
    await reopened.close();
  });

  it("of the collections waiting behind a hanging one only the newest runs; checkpoint() and close() wait for them", async () => {
    const store = new HeldWalDeletes();
    const engine = await Engine.open(store, paced);
    await seed(engine);
    await commitEach(engine, ["b/1"]);
    await engine.checkpoint();

    store.holding = true;
    const listingsBefore = store.walListings;
    await commitEach(engine, ["b/3", "b/4"]);
    await turnsUntil(() => store.deletesHeld > 0);
    // Two more checkpoints publish while the first collection hangs.
    await commitEach(engine, ["b/5", "b/6"]);
    await turnsUntil(() => engine.stats.checkpoints === 3);
    await commitEach(engine, ["b/7", "b/8"]);
    await turnsUntil(() => engine.stats.checkpoints === 4);
    expect(engine.stats.checkpoints).toBe(4);
    // Only the hanging collection has listed the WAL so far.
    expect(store.walListings - listingsBefore).toBe(1);

    store.release();
    await engine.checkpoint();
    // The hanging one, then the newest (the fourth checkpoint's); the third's was dropped, the fourth's deletes all it would.
    expect(store.walListings - listingsBefore).toBe(2);
    expect((await store.walKeys()).length).toBeLessThanOrEqual(1);

    // close() waits for a collection still running.
    store.holding = true;
    await commitEach(engine, ["b/9", "b/10"]);
    await turnsUntil(() => engine.stats.checkpoints === 5 && store.deletesHeld > 0);
    const closing = engine.close();
    expect(await settlesWithinTurns(closing, 20)).toBe(false);
    store.release();
    await closing;
    const reopened = await Engine.open(store);
    expect([...reopened.scan({ prefix: "b/" })].map(([k]) => k)).toEqual(["b/1", "b/3", "b/4", "b/5", "b/6", "b/7", "b/8", "b/9", "b/10"].sort());
    await reopened.close();
  });

  it("a closing writer skips the deletes left in its collections; the next writer's first checkpoint removes those objects", async () => {
    const store = new HeldWalDeletes();
    const engine = await Engine.open(store, paced);
    await seed(engine);
    store.holding = true;
    const keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
    await commitEach(engine, keys);
    await turnsUntil(() => store.deletesHeld > 0);
    expect(store.deletesHeld).toBeGreaterThan(0);
    const closing = engine.close();
    store.release();
    await closing;
    // The deletes the close skipped: covered WAL objects are still there.
    const left = await store.coveredWal();
    expect(left.length).toBeGreaterThan(1);

    const next = await Engine.open(store, { retry });
    for (const k of keys) expect(new TextDecoder().decode(next.get(k))).toBe(k);
    await next.commit(new WriteBatch().put("after", enc("after")));
    await next.checkpoint();
    const still = await store.walKeys();
    expect(left.filter((k) => still.includes(k))).toEqual([]);
    expect(await store.coveredWal()).toEqual([]);
    await next.close();
  });
});
