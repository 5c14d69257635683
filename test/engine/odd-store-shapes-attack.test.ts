/**
 * @module Stores of odd shapes given to open: frozen stores (nothing may be
 * set on the store object), a Proxy that binds each method to its target
 * (a logging wrapper), a Proxy that does not (the built-in stores' methods
 * would meet the Proxy as `this` and could not reach their private state:
 * refused before any request), and
 * a store whose method getter starts throwing after the open checked it.
 * Each works, or fails with a typed error that writes nothing and ends.
 */
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, MemoryStore, type ObjectStore, Queue, TaqubaError, ValidationError, WriteBatch } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const freshDir = useTempDirs("taquba-odd-store-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const fast = { retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 0 } };

async function keysOf(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list("")) keys.push(o.key);
  return keys;
}

/** Writes, checkpoints, closes and reopens an engine over `store`; the value read back. */
async function roundTrip(store: ObjectStore): Promise<string | undefined> {
  const e = await Engine.open(store, { checkpointWalObjects: 0, ...fast });
  await e.commit(new WriteBatch().put("a", enc("1")));
  await e.checkpoint();
  await e.commit(new WriteBatch().put("b", enc("2")));
  await e.close();
  const again = await Engine.open(store, { checkpointWalObjects: 0, ...fast });
  const read = `${dec(await again.get("a"))}${dec(await again.get("b"))}`;
  await again.close();
  return read;
}

describe("stores of odd shapes given to open", () => {
  it("frozen MemoryStore and LocalStore: an engine and a queue work over them as over the stores themselves", async () => {
    for (const store of [Object.freeze(new MemoryStore()), Object.freeze(new LocalStore(await freshDir()))]) {
      expect(await roundTrip(store)).toBe("12");
      const q = await Queue.open(store, "q", { flushIntervalMs: 0 });
      await q.enqueue("jobs", enc("x"));
      const job = await q.claim("jobs");
      expect(dec(job?.payload)).toBe("x");
      await q.ack(job!);
      await q.close();
    }
  });

  it("a Proxy binding each method to its store works", async () => {
    const inner = new MemoryStore();
    const bound = new Proxy(inner, {
      get(target, name) {
        const v = Reflect.get(target, name, target) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    expect(await roundTrip(bound)).toBe("12");
  });

  it("a Proxy whose methods meet it as `this`: the open is refused at once with a ValidationError naming the method and what to pass, and writes nothing", async () => {
    for (const inner of [new MemoryStore(), new LocalStore(await freshDir())]) {
      const name = inner.constructor.name;
      const proxy = new Proxy(inner, {});
      const failed = await Engine.open(proxy, fast).then(
        (e) => e,
        (err: unknown) => err,
      );
      expect(failed).toBeInstanceOf(ValidationError);
      expect(String((failed as Error).message)).toContain(
        `Engine.open's store is a Proxy or wrapper around a ${name} whose get is the ${name}'s own method, which would run on the wrapper`,
      );
      expect(String((failed as Error).message)).toContain(`Pass the ${name}, or make the wrapper call its methods on it`);
      expect(await keysOf(inner)).toEqual([]);
    }
  });

  it("a store whose get starts throwing when read after the open: reads and the reopen fail typed, the writes before stay", async () => {
    const inner = new MemoryStore();
    let broken = false;
    const store: ObjectStore = {
      get get() {
        if (broken) throw new Error("the get method is gone");
        return inner.get.bind(inner);
      },
      put: inner.put.bind(inner),
      list: inner.list.bind(inner),
      delete: inner.delete.bind(inner),
    };
    const e = await Engine.open(store, { checkpointWalObjects: 0, ...fast });
    await e.commit(new WriteBatch().put("a", enc("1")));
    await e.checkpoint();
    broken = true;
    // Commits need no reads: they go on.
    await e.commit(new WriteBatch().put("b", enc("2")));
    await e.close();
    await expect(Engine.open(store, fast)).rejects.toBeInstanceOf(TaqubaError);
    broken = false;
    expect(await roundTrip(store)).toBe("12");
  });
});
