/**
 * @module The put thread's tidy-up after its answer (store/local-put-thread.ts):
 * a put resolves once its directory fsync returned, before the thread
 * closes its files and removes the temporary name, and `close()` ends the
 * thread only after that tidy-up. The thread's `unlinkSync` is held on a
 * gate the test opens (the worker's source is wrapped when it starts), so
 * the order is seen without timing.
 */
import { existsSync, readdirSync, readlinkSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PutThread } from "../../runtime/store/local-put-thread.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

/** One Int32 the thread's removal of a temporary name waits on while it is 0. */
const gate = vi.hoisted(() => new Int32Array(new SharedArrayBuffer(4)));

vi.mock("node:worker_threads", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:worker_threads")>();
  const hold = `const __gate = new Int32Array(require("node:worker_threads").workerData.gate);
const __fs = require("node:fs");
const __unlinkSync = __fs.unlinkSync;
__fs.unlinkSync = (p) => { if (String(p).includes("%tmp.")) Atomics.wait(__gate, 0, 0); return __unlinkSync(p); };
`;
  class GatedWorker extends real.Worker {
    constructor(source: string, opts: { workerData: object } & Record<string, unknown>) {
      super(source.replace('"use strict";\n', `"use strict";\n${hold}`), { ...opts, workerData: { ...opts.workerData, gate: gate.buffer } });
    }
  }
  return { ...real, Worker: GatedWorker };
});

const tempDir = useTempDirs("taquba-put-thread-tidy-");

function openGate(): void {
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
}

afterEach(() => {
  openGate();
  Atomics.store(gate, 0, 0);
});

/** Settles with "pending" when `p` has not settled within `ms`. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve("pending"), ms);
  });
  try {
    return await Promise.race([p.then((value) => ({ value })), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** This process's open descriptors that point at `file`. */
function descriptorsOf(file: string): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(file)) n++;
    } catch {
      // Closed meanwhile.
    }
  }
  return n;
}

describe.skipIf(process.platform !== "linux")("the put thread's tidy-up after its answer", () => {
  it("a put resolves before the thread removes its temporary name, and close() waits for that removal", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const temp = join(dir, `%tmp.${process.pid}.1.tidy`);
    const put = thread.put(temp, join(dir, "a"), dir, new Uint8Array([1, 2, 3]), true);
    // The removal is held: the put must not wait for it.
    const outcome = await settledWithin(put, 10_000);
    expect(outcome, "the put must resolve while its temporary name's removal is held").not.toBe("pending");
    expect(existsSync(join(dir, "a"))).toBe(true);
    expect(existsSync(temp), "the removal comes after the answer").toBe(true);
    // close() must not end the thread in the middle of its tidy-up.
    const closed = thread.close();
    expect(await settledWithin(closed, 200), "close() waits for the tidy-up").toBe("pending");
    openGate();
    await closed;
    expect(thread.running).toBe(false);
    expect(existsSync(temp), "the tidy-up finished before the thread ended").toBe(false);
    expect(descriptorsOf(temp), "no descriptor of the put's file is left open").toBe(0);
    expect(readdirSync(dir)).toEqual(["a"]);
  });

  it("a put made while the thread still tidies up after the last one waits for it, then lands", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    await thread.put(join(dir, `%tmp.${process.pid}.1.tidy`), join(dir, "a"), dir, new Uint8Array([1]), true);
    expect(thread.canTake(1), "the thread takes the next put once it answered").toBe(true);
    const second = thread.put(join(dir, `%tmp.${process.pid}.2.tidy`), join(dir, "b"), dir, new Uint8Array([2]), true);
    openGate();
    await second;
    await thread.close();
    expect(readdirSync(dir).sort()).toEqual(["a", "b"]);
  });

  it.for(["exit", "end"])(
    "a process that ends (%s) right after a put waits for the thread's tidy-up: no temporary name is left",
    { timeout: loadLimitTimeout(30_000) },
    async (how) => {
      const dir = await tempDir();
      // The child's thread takes 300 ms to remove the temporary name; the process ends right after the put.
      const child = startScript(fileURLToPath(new URL("./fixtures/local-put-exit-tidy.ts", import.meta.url)), [dir, how]);
      expect(await child.exited).toEqual({ code: 0, signal: null });
      expect(child.lines).toContain("put through the thread");
      expect(await readdir(join(dir, "wal%2F"))).toEqual(["1"]);
    },
  );
});
