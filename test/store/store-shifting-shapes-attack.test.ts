/**
 * @module Stores of shapes the open's check sees only once: a class whose
 * methods are getters, a store whose methods change between calls (a
 * built-in store's own method swapped in after the check, a method that
 * starts throwing synchronously instead of rejecting), a Proxy whose traps
 * count reads, and frozen wrappers. Each works, or fails with a typed error
 * that loses no acknowledged write, leaves no unhandled rejection and ends.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, type ObjectStore, Queue, TaqubaError, ValidationError, WriteBatch } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const fast = { retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 0 }, checkpointWalObjects: 0 };

/** The values of `keys` an engine reopened over `store` reads. */
async function readBack(store: ObjectStore, keys: readonly string[]): Promise<Array<string | undefined>> {
  const e = await Engine.open(store, fast);
  try {
    return await Promise.all(keys.map(async (k) => dec(await e.get(k))));
  } finally {
    await e.close();
  }
}

/** Settles `p` to its value or its error. */
const outcomeOf = <T>(p: Promise<T>): Promise<T | unknown> =>
  p.then(
    (v) => v,
    (err: unknown) => err,
  );

/** A store class whose four methods are getters answering arrow functions over a MemoryStore. */
class GetterStore {
  readonly inner = new MemoryStore();
  /** Reads of the methods; held outside the store, which may be frozen. */
  readonly counted = { reads: 0 };
  get reads(): number {
    return this.counted.reads;
  }
  get get(): ObjectStore["get"] {
    this.counted.reads++;
    return (k) => this.inner.get(k);
  }
  get put(): ObjectStore["put"] {
    this.counted.reads++;
    return (k, b, o) => this.inner.put(k, b, o);
  }
  get list(): ObjectStore["list"] {
    this.counted.reads++;
    return (p, o) => this.inner.list(p, o);
  }
  get delete(): ObjectStore["delete"] {
    this.counted.reads++;
    return (k) => this.inner.delete(k);
  }
}

describe("stores whose shape shifts after the open's check", () => {
  it("a class whose methods are getters: an engine and a queue work over it, and over it frozen", async () => {
    for (const store of [new GetterStore(), Object.freeze(new GetterStore())]) {
      const e = await Engine.open(store, fast);
      await e.commit(new WriteBatch().put("a", enc("1")));
      await e.checkpoint();
      await e.commit(new WriteBatch().put("b", enc("2")));
      await e.close();
      expect(await readBack(store, ["a", "b"])).toEqual(["1", "2"]);
      const q = await Queue.open(store, "q", { flushIntervalMs: 0 });
      await q.enqueue("jobs", enc("x"));
      const job = await q.claim("jobs");
      expect(dec(job?.payload)).toBe("x");
      await q.ack(job!);
      await q.close();
      expect(store.reads).toBeGreaterThan(4);
    }
  });

  it("a put swapped for a MemoryStore's own method after the open: the commit fails typed, every acknowledged write stays", async () => {
    const inner = new MemoryStore();
    let swapped = false;
    const store = {
      get: (k: string) => inner.get(k),
      list: (p: string, o?: Parameters<ObjectStore["list"]>[1]) => inner.list(p, o),
      delete: (k: string) => inner.delete(k),
      get put(): ObjectStore["put"] {
        // Read off the store and called on this wrapper, it cannot reach the store's private state.
        return swapped ? inner.put : (k, b, o) => inner.put(k, b, o);
      },
    };
    const e = await Engine.open(store, fast);
    await e.commit(new WriteBatch().put("a", enc("1")));
    swapped = true;
    const failed = await outcomeOf(e.commit(new WriteBatch().put("b", enc("2"))));
    expect(failed).toBeInstanceOf(TaqubaError);
    await outcomeOf(e.close());
    swapped = false;
    expect(await readBack(inner, ["a", "b"])).toEqual(["1", undefined]);
  });

  for (const method of ["put", "get", "list", "delete"] as const) {
    it(`a ${method} that starts throwing synchronously when called (not rejecting): typed failures, no write lost, the engine ends`, async () => {
      const inner = new MemoryStore();
      let throwing = false;
      const store: ObjectStore = {
        get: (k) => inner.get(k),
        put: (k, b, o) => inner.put(k, b, o),
        list: (p, o) => inner.list(p, o),
        delete: (k) => inner.delete(k),
      };
      const original = store[method] as (...args: unknown[]) => unknown;
      (store as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        if (throwing) throw new RangeError(`${method} broke synchronously`);
        return original(...args);
      };
      const e = await Engine.open(store, fast);
      for (let i = 0; i < 4; i++) await e.commit(new WriteBatch().put(`k${i}`, enc(String(i))));
      await e.checkpoint();
      throwing = true;
      // Whatever the engine does next (commits, checkpoints and their clean-up, a reopen), failures are typed.
      const later = await outcomeOf(
        (async () => {
          await e.commit(new WriteBatch().put("k4", enc("4")));
          await e.checkpoint();
          return "ok";
        })(),
      );
      if (later !== "ok") expect(later).toBeInstanceOf(TaqubaError);
      const closed = await outcomeOf(e.close());
      if (closed !== undefined) expect(closed).toBeInstanceOf(TaqubaError);
      const reopened = await outcomeOf(Engine.open(store, fast));
      if (reopened instanceof Engine) await reopened.close();
      else expect(reopened).toBeInstanceOf(TaqubaError);
      throwing = false;
      const read = await readBack(inner, ["k0", "k1", "k2", "k3", "k4"]);
      expect(read.slice(0, 4)).toEqual(["0", "1", "2", "3"]);
      // An acknowledged k4 stays (one refused may still have landed: its WAL object can be stored before the refusal).
      if (later === "ok") expect(read[4]).toBe("4");
    });
  }

  it("a store whose methods answer plain values instead of promises works as one answering promises", async () => {
    const inner = new MemoryStore();
    const store = {
      get: (k: string) => inner.get(k),
      put: (k: string, b: Uint8Array, o?: Parameters<ObjectStore["put"]>[2]) => inner.put(k, b, o),
      list: (p: string, o?: Parameters<ObjectStore["list"]>[1]) => inner.list(p, o),
      delete(k: string): void {
        // Not a promise: the delete runs now and answers nothing.
        void inner.delete(k);
      },
    };
    const e = await Engine.open(store as unknown as ObjectStore, fast);
    for (let i = 0; i < 20; i++) {
      await e.commit(new WriteBatch().put(`k${i}`, enc(String(i))));
      if (i % 5 === 4) await e.checkpoint();
    }
    await e.close();
    expect(await readBack(inner, ["k0", "k19"])).toEqual(["0", "19"]);
  });

  it("a Proxy whose ownKeys, has and getOwnPropertyDescriptor traps throw, but whose get trap binds: opens and works", async () => {
    const inner = new MemoryStore();
    const proxy = new Proxy(inner, {
      get(target, name) {
        const v = Reflect.get(target, name, target) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
      has() {
        throw new Error("has trap");
      },
      ownKeys() {
        throw new Error("ownKeys trap");
      },
      getOwnPropertyDescriptor() {
        throw new Error("descriptor trap");
      },
    });
    const opened = await outcomeOf(Engine.open(proxy, fast));
    if (opened instanceof Engine) {
      await opened.commit(new WriteBatch().put("a", enc("1")));
      await opened.close();
      expect(await readBack(inner, ["a"])).toEqual(["1"]);
    } else {
      // Refused: only as a ValidationError, before any request.
      expect(opened).toBeInstanceOf(ValidationError);
      const keys: string[] = [];
      for await (const o of inner.list("")) keys.push(o.key);
      expect(keys).toEqual([]);
    }
  });
});
