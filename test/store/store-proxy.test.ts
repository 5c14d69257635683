/**
 * @module Proxies and other wrappers around the built-in stores, given to
 * the entry points that open a store. One whose methods reach the store
 * (a Proxy whose get trap binds them, a subclass) opens and serves; one
 * that would call a built-in store's own method on itself (a Proxy with no
 * binding trap, `Object.create(store)`), whose method read throws, or
 * whose method is not a function is a `ValidationError` at once naming the
 * method and what to pass, before any request: never a
 * `StoreUnavailableError` after retries blaming the store's reachability.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  LocalStore,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  QueueReader,
  routeShardSchedules,
  serveClients,
  StepOutcome,
  TaqubaClient,
  ValidationError,
  WorkflowRuntime,
  withCounting,
  type ObjectStore,
} from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-store-proxy-");

/** A Proxy whose get trap hands out each method bound to its target: calls reach the store. */
function forwarding<S extends object>(store: S, reads: string[] = []): S {
  return new Proxy(store, {
    get(target, p, receiver) {
      if (typeof p === "string") reads.push(p);
      const v = Reflect.get(target, p, receiver);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function keysOf(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) out.push(o.key);
  return out;
}

const stores: [string, () => Promise<ObjectStore>][] = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
];

describe.each(stores)("a Proxy around a %s", (name, make) => {
  it("that forwards every method to the store opens, serves and reopens", async () => {
    const store = await make();
    const reads: string[] = [];
    const queue = await Queue.open(forwarding(store, reads), "q");
    await queue.enqueue("jobs", new TextEncoder().encode("x"));
    await queue.close();
    expect(reads).toContain("put");
    const again = await Queue.open(forwarding(store), "q");
    expect((await again.view().stats("jobs")).pending).toBe(1);
    await again.close();
    const reader = await QueueReader.open(forwarding(store), "q");
    expect((await reader.stats("jobs")).pending).toBe(1);
    await reader.close();
  });

  it("a subclass of the store is the store itself: taken", async () => {
    const dir = name === "LocalStore" ? await tempDir() : undefined;
    const store = dir === undefined ? new (class extends MemoryStore {})() : new (class extends LocalStore {})(dir);
    const engine = await Engine.open(store);
    await engine.close();
  });

  it("that calls the store's own methods on itself is refused at once by every entry point, before any request", async () => {
    const store = await make();
    const plain = new Proxy(store, {});
    const refusal = (at: string) =>
      new RegExp(
        `^${at} is a Proxy or wrapper around a ${name} whose get is the ${name}'s own method.*Pass the ${name}, or make the wrapper call its methods on it`,
      );
    await expect(Queue.open(plain, "q")).rejects.toThrow(refusal("Queue\\.open's store"));
    await expect(Queue.open(plain, "q")).rejects.toBeInstanceOf(ValidationError);
    await expect(Engine.open(plain)).rejects.toThrow(refusal("Engine\\.open's store"));
    await expect(QueueReader.open(plain, "q")).rejects.toThrow(refusal("QueueReader\\.open's store"));
    await expect(TaqubaClient.open(plain, { name: "q" })).rejects.toThrow(refusal("TaqubaClient\\.open's store"));
    expect(() => withCounting(plain)).toThrow(refusal("the store withCounting wraps"));
    // An object inheriting from the store is the same mistake.
    await expect(Queue.open(Object.create(store) as ObjectStore, "q")).rejects.toThrow(refusal("Queue\\.open's store"));
    // Nothing was written.
    expect(await keysOf(store)).toEqual([]);
  });

  it("and the runtime builder names it among its problems", async () => {
    const store = await make();
    const queue = await Queue.open(store, "q");
    try {
      const runner = { runStep: async () => StepOutcome.succeed(new Uint8Array(0)) };
      let err: unknown;
      try {
        WorkflowRuntime.builder(queue, new Proxy(store, {}), runner, NoopTerminalHook).build();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain(`the store is a Proxy or wrapper around a ${name} whose get is the ${name}'s own method`);
    } finally {
      await queue.close();
    }
  });

  it("and serving clients or routing shard schedules over it is refused at once, naming the option", async () => {
    const store = await make();
    const queue = await Queue.open(store, "q");
    try {
      const runner = { runStep: async () => StepOutcome.succeed(new Uint8Array(0)) };
      const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();
      const own = `is a Proxy or wrapper around a ${name} whose get is the ${name}'s own method`;
      expect(() => serveClients(queue, runtime, { store: new Proxy(store, {}) })).toThrow(new RegExp(`^ServeClientsOptions\\.store ${own}`));
      expect(() => routeShardSchedules(runtime, new Proxy(store, {}), { name: "q", shard: 0, shards: 1 })).toThrow(
        new RegExp(`^routeShardSchedules's store ${own}`),
      );
    } finally {
      await queue.close();
    }
  });

  it("whose get trap throws on a method read is refused at once, naming the method", async () => {
    const store = await make();
    // Every request made through the Proxy, and every read of its put: counted, not timed (a loaded machine stretches any time).
    const requests: string[] = [];
    let putReads = 0;
    const throwing = new Proxy(store, {
      get(target, p) {
        if (p === "put") {
          putReads++;
          throw new Error("no put here");
        }
        const v = Reflect.get(target, p, target);
        if (typeof v !== "function") return v;
        return (...a: unknown[]) => {
          requests.push(String(p));
          return (v as (...a: unknown[]) => unknown).apply(target, a);
        };
      },
    });
    const err = await Queue.open(throwing, "q").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toBe(
      "Queue.open's store must be an ObjectStore (with get, put, list and delete methods), got an object that threw when its method put was read (Error: no put here); " +
        "pass an ObjectStore (a MemoryStore, a LocalStore, a store from openStore) or a wrapper whose methods call it",
    );
    // At once: no request was tried, so no retry was waited for; put was read by the check only (a retried open reads it again).
    expect(requests).toEqual([]);
    expect(putReads).toBeLessThanOrEqual(2);
    expect(await keysOf(store)).toEqual([]);
  });

  it("whose method read finds something other than a function is refused at once, naming the method", async () => {
    const store = await make();
    const odd = new Proxy(store, {
      get(target, p) {
        if (p === "list") return "not a function";
        const v = Reflect.get(target, p, target);
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    await expect(Engine.open(odd)).rejects.toThrow(
      new ValidationError(
        `Engine.open's store must be an ObjectStore (with get, put, list and delete methods), got an object whose list is "not a function" (a string), not a function; ` +
          "pass an ObjectStore (a MemoryStore, a LocalStore, a store from openStore) or a wrapper whose methods call it",
      ),
    );
    expect(await keysOf(store)).toEqual([]);
  });
});
