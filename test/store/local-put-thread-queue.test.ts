/**
 * @module Two puts at once on LocalStore's put thread (store/local-put-thread.ts):
 * a put sent while another is being made waits in the next slot and goes
 * to the thread, not to the thread pool; the thread makes them in the order
 * sent, the second's file written only once the first is durable, so a
 * later object is never in place while an earlier one may not be. The
 * thread's `linkSync` of a name on the gate list waits on a gate the test
 * opens (the worker's source is wrapped when it starts), so the order is
 * seen without timing.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LocalStore } from "taquba";
import { PutThread, PutThreadStopped, sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";

/** One Int32 the thread's link of a held target waits on while it is 0. */
const gate = vi.hoisted(() => new Int32Array(new SharedArrayBuffer(4)));

vi.mock("node:worker_threads", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:worker_threads")>();
  // Only targets whose name ends in ".held" wait: the other puts of the thread pass.
  const hold = `const __gate = new Int32Array(require("node:worker_threads").workerData.gate);
const __fs = require("node:fs");
const __linkSync = __fs.linkSync;
__fs.linkSync = (from, to) => { if (String(to).endsWith(".held")) Atomics.wait(__gate, 0, 0); return __linkSync(from, to); };
`;
  class GatedWorker extends real.Worker {
    constructor(source: string, opts: { workerData: object } & Record<string, unknown>) {
      super(source.replace('"use strict";\n', `"use strict";\n${hold}`), { ...opts, workerData: { ...opts.workerData, gate: gate.buffer } });
    }
  }
  return { ...real, Worker: GatedWorker };
});

const tempDir = useTempDirs("taquba-put-thread-queue-");
const bytes = (...b: number[]) => new Uint8Array(b);

function openGate(): void {
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
}

afterEach(() => {
  openGate();
  Atomics.store(gate, 0, 0);
});

/** Turns of the event loop until `done()` holds (the thread works beside them), failing after `limit`. */
async function turnsUntil(done: () => boolean, what: string, limit = 2_000): Promise<void> {
  for (let i = 0; !done(); i++) {
    if (i >= limit) throw new Error(`${what}: not after ${limit} turns`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe.skipIf(process.platform !== "linux")("two puts at once on the put thread", () => {
  it("takes a second put while one is made, makes it after the first is durable, and answers both in order", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const temp = (n: string) => join(dir, `%tmp.${process.pid}.${n}.queue`);
    const settled: string[] = [];
    const first = thread.put(temp("1"), join(dir, "a.held"), dir, bytes(1), true).then((s) => (settled.push("a"), s));
    expect(thread.canTake(1), "a second put waits in the next slot").toBe(true);
    const second = thread.put(temp("2"), join(dir, "b"), dir, bytes(2, 2), true).then((s) => (settled.push("b"), s));
    expect(thread.inFlight).toBe(2);
    expect(thread.canTake(1), "no third while two are with the thread").toBe(false);
    // The first is held at its link: the second must not be written, let alone in place, before it.
    await turnsUntil(() => existsSync(temp("1")), "the first put's file");
    await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(join(dir, "b")), "the later put is not in place before the earlier one").toBe(false);
    expect(existsSync(temp("2")), "nor is its file written").toBe(false);
    expect(settled).toEqual([]);
    openGate();
    const [a, b] = await Promise.all([first, second]);
    expect(settled, "answered in the order sent").toEqual(["a", "b"]);
    expect([a.size, b.size]).toEqual([1n, 2n]);
    expect(readFileSync(join(dir, "a.held"))).toEqual(Buffer.from([1]));
    expect(readFileSync(join(dir, "b"))).toEqual(Buffer.from([2, 2]));
    expect(thread.canTake(1)).toBe(true);
    // And on: the slots are taken in turn, however many puts come after.
    for (let i = 0; i < 5; i++) {
      await Promise.all([
        thread.put(temp(`x${i}`), join(dir, `x${i}`), dir, bytes(i), true),
        thread.put(temp(`y${i}`), join(dir, `y${i}`), dir, bytes(i, i), true),
      ]);
    }
    expect(readFileSync(join(dir, "y4"))).toEqual(Buffer.from([4, 4]));
    await thread.close();
    expect(thread.running).toBe(false);
  });

  it("a store's create-if-absent puts made at once both go to the thread, the later one in place only after the earlier", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const thread = sharedPutThread();
    // The directory made first, so that both puts go straight to the thread.
    await store.put("wal/0", bytes(0), { ifNoneMatch: "*" });
    await thread.tidied();
    const first = store.put("wal/1.held", bytes(1), { ifNoneMatch: "*" });
    const second = store.put("wal/2", bytes(2), { ifNoneMatch: "*" });
    // Through the thread pool, the second would land meanwhile beside the held one.
    await Promise.race([second, new Promise((r) => setTimeout(r, 300))]);
    expect(existsSync(join(dir, "wal%2F", "2")), "the later object is not in place before the earlier one").toBe(false);
    expect(thread.inFlight, "both puts with the thread").toBe(2);
    openGate();
    await Promise.all([first, second]);
    expect((await store.get("wal/2"))!.body).toEqual(bytes(2));
    expect((await store.get("wal/1.held"))!.body).toEqual(bytes(1));
  });

  it("a thread that stops with two puts fails both with PutThreadStopped", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const temp = (n: string) => join(dir, `%tmp.${process.pid}.${n}.queue`);
    const first = thread.put(temp("1"), join(dir, "a.held"), dir, bytes(1), true).catch((e: unknown) => e);
    const second = thread.put(temp("2"), join(dir, "b"), dir, bytes(2), true).catch((e: unknown) => e);
    await turnsUntil(() => existsSync(temp("1")), "the first put's file");
    await thread.stopForTest();
    expect(await first).toBeInstanceOf(PutThreadStopped);
    expect(await second).toBeInstanceOf(PutThreadStopped);
    expect(existsSync(join(dir, "b"))).toBe(false);
    expect(thread.canTake(1), "later puts go through the pool").toBe(false);
  });
});
