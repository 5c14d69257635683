/**
 * @module LocalStore's second put thread (store/local-put-thread.ts,
 * `PutThreadPair`): a create-if-absent put made while the first thread is
 * busy goes to a second thread instead of the thread pool, and lands
 * beside the first. So a later WAL object can be stored while an earlier
 * one is not: the engine acknowledges neither until both are, and a crash
 * then (the store's directory copied as it is) recovers up to the gap. A
 * put thread's `linkSync` of the next WAL object, once armed, waits on a
 * gate the test opens (the worker's source is wrapped when it starts), so
 * the order is seen without timing.
 */
import { cpSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Engine, LocalStore, WriteBatch } from "taquba";
import { sharedPutThread, sharedPutThreads } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

/** [0]: the gate, held while 0; [1]: 1 arms it for the next WAL object's link (taken by one thread only). */
const gate = vi.hoisted(() => new Int32Array(new SharedArrayBuffer(8)));

vi.mock("node:worker_threads", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:worker_threads")>();
  const hold = `const __gate = new Int32Array(require("node:worker_threads").workerData.gate);
const __fs = require("node:fs");
const __linkSync = __fs.linkSync;
__fs.linkSync = (from, to) => {
  if (String(to).includes("wal%2F") && Atomics.compareExchange(__gate, 1, 1, 0) === 1) Atomics.wait(__gate, 0, 0);
  return __linkSync(from, to);
};
`;
  class GatedWorker extends real.Worker {
    constructor(source: string, opts: { workerData: object } & Record<string, unknown>) {
      super(source.replace('"use strict";\n', `"use strict";\n${hold}`), { ...opts, workerData: { ...opts.workerData, gate: gate.buffer } });
    }
  }
  return { ...real, Worker: GatedWorker };
});

const tempDir = useTempDirs("taquba-put-threads-");
const enc = (s: string) => new TextEncoder().encode(s);

function openGate(): void {
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
}

afterEach(() => {
  openGate();
  Atomics.store(gate, 0, 0);
  Atomics.store(gate, 1, 0);
});

/** The WAL objects under their final names in a LocalStore directory. */
const walFiles = (dir: string): string[] => readdirSync(join(dir, "wal%2F")).filter((n) => !n.startsWith("%tmp."));

describe.skipIf(process.platform !== "linux")("LocalStore's second put thread", () => {
  it("is off by default: a put made while the first thread is held goes through the thread pool", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await store.put("wal/0", enc("0"), { ifNoneMatch: "*" });
    Atomics.store(gate, 1, 1);
    const held = store.put("wal/1", enc("1"), { ifNoneMatch: "*" });
    await until("the first put held on the first thread", () => Atomics.load(gate, 1) === 0 && sharedPutThread().busy, 30_000);
    await store.put("wal/2", enc("2"), { ifNoneMatch: "*" });
    expect(sharedPutThreads(true).started, "no second thread started").toBe(1);
    openGate();
    await held;
    expect(() => new LocalStore(dir, { secondPutThread: "yes" as unknown as boolean })).toThrow(/secondPutThread must be true or false, got "yes"/);
    expect(() => new LocalStore(dir, { putThread: false, secondPutThread: true })).toThrow(/secondPutThread needs putThread/);
  });

  it("takes a WAL put made while the first thread is held; a crash then recovers up to the gap, and nothing past it was acknowledged", async () => {
    const dir = await tempDir();
    const engine = await Engine.open(new LocalStore(dir, { secondPutThread: true }), { flushIntervalMs: 0 });
    await engine.commit(new WriteBatch().put("before", enc("0")));
    const stored = walFiles(dir).length;
    const acknowledged: string[] = [];
    Atomics.store(gate, 1, 1);
    const first = engine.commit(new WriteBatch().put("a", enc("1"))).then(() => acknowledged.push("a"));
    // Held at its link on the first thread.
    await until("the first WAL put held on the first thread", () => Atomics.load(gate, 1) === 0 && sharedPutThread().busy, 30_000);
    const second = engine.commit(new WriteBatch().put("b", enc("2"))).then(() => acknowledged.push("b"));
    // Through the second thread it lands beside the held one (the pool would too, but not on a thread).
    await until("the later WAL object stored", () => walFiles(dir).length === stored + 1, 30_000);
    // Its file is in place before its directory fsync returns: then only the held put is left in flight.
    await until("the second put answered, the first still held", () => sharedPutThreads(true).inFlight === 1, 30_000);
    expect(sharedPutThreads(true).started, "a second thread took the put").toBe(2);
    // Stored but behind a missing object: not acknowledged.
    await new Promise((r) => setTimeout(r, 50));
    expect(acknowledged).toEqual([]);

    // A crash now: the directory as it is, the later object on disk, the earlier not.
    const crashed = await tempDir();
    cpSync(dir, crashed, { recursive: true });
    const reopened = await Engine.open(new LocalStore(crashed));
    expect(
      [...reopened.scan()].map(([k]) => k),
      "replayed up to the gap only",
    ).toEqual(["before"]);
    await reopened.commit(new WriteBatch().put("c", enc("3")));
    await reopened.close();
    const third = await Engine.open(new LocalStore(crashed));
    expect([...third.scan()].map(([k]) => k)).toEqual(["before", "c"]);
    await third.close();

    // The live writer: both acknowledged once the earlier lands, in the WAL's order.
    openGate();
    await Promise.all([first, second]);
    expect(acknowledged).toEqual(["a", "b"]);
    expect(existsSync(join(dir, "wal%2F"))).toBe(true);
    await engine.close();
    const after = await Engine.open(new LocalStore(dir));
    expect([...after.scan()].map(([k]) => k)).toEqual(["a", "b", "before"]);
    await after.close();
  });
});
