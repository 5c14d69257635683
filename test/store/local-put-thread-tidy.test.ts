/**
 * @module The put thread's order around its answer (store/local-put-thread.ts):
 * a create-if-absent put's temporary name is removed before the directory
 * fsync, so the put resolves only once it is gone; the thread closes its
 * files and makes the next put's file after answering, and `close()` ends
 * the thread only after that tidy-up. The thread's `unlinkSync` of a
 * temporary name and its `openSync` of a name ending in `.next` are held
 * on gates the test opens (the worker's source is wrapped when it starts),
 * so the order is seen without timing.
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
import { until } from "../support/until.js";

/** Two Int32: the thread's removal of a temporary name waits on the first while it is 0, its creation of a `.next` file on the second. */
const gate = vi.hoisted(() => new Int32Array(new SharedArrayBuffer(8)));
const UNLINK = 0;
const MAKE_NEXT = 1;

vi.mock("node:worker_threads", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:worker_threads")>();
  const hold = `const __gate = new Int32Array(require("node:worker_threads").workerData.gate);
const __fs = require("node:fs");
const __unlinkSync = __fs.unlinkSync;
__fs.unlinkSync = (p) => { if (String(p).includes("%tmp.")) Atomics.wait(__gate, 0, 0); return __unlinkSync(p); };
const __openSync = __fs.openSync;
__fs.openSync = (p, ...rest) => { if (String(p).endsWith(".next")) Atomics.wait(__gate, 1, 0); return __openSync(p, ...rest); };
`;
  class GatedWorker extends real.Worker {
    constructor(source: string, opts: { workerData: object } & Record<string, unknown>) {
      super(source.replace('"use strict";\n', `"use strict";\n${hold}`), { ...opts, workerData: { ...opts.workerData, gate: gate.buffer } });
    }
  }
  return { ...real, Worker: GatedWorker };
});

const tempDir = useTempDirs("taquba-put-thread-tidy-");

function openGate(which: number): void {
  Atomics.store(gate, which, 1);
  Atomics.notify(gate, which);
}

afterEach(() => {
  openGate(UNLINK);
  openGate(MAKE_NEXT);
  Atomics.store(gate, UNLINK, 0);
  Atomics.store(gate, MAKE_NEXT, 0);
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
  it("a put resolves only once its temporary name is removed, so its directory's fsync never writes that name beside the object's", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const temp = join(dir, `%tmp.${process.pid}.1.tidy`);
    const put = thread.put(temp, join(dir, "a"), dir, new Uint8Array([1, 2, 3]), true);
    // The removal is held once the object is linked: the put must wait for it (the directory fsync comes after it).
    await until("the object is linked", () => existsSync(join(dir, "a")), loadLimitTimeout(10_000));
    expect(await settledWithin(put, 200), "the put waits for its temporary name's removal").toBe("pending");
    expect(existsSync(temp), "its removal is held").toBe(true);
    openGate(UNLINK);
    await put;
    expect(existsSync(temp), "gone when the put resolves").toBe(false);
    expect(readdirSync(dir)).toEqual(["a"]);
    await thread.close();
  });

  it("close() waits for the tidy-up after the answer: the next put's file made, then dropped", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    openGate(UNLINK);
    const next = join(dir, `%tmp.${process.pid}.2.next`);
    // The put resolves while the tidy-up after it (making the next put's file) is held.
    const outcome = await settledWithin(thread.put(join(dir, `%tmp.${process.pid}.1.tidy`), join(dir, "a"), dir, new Uint8Array([1]), true, next), 10_000);
    expect(outcome, "the put must resolve while the tidy-up is held").not.toBe("pending");
    const closed = thread.close();
    expect(await settledWithin(closed, 200), "close() waits for the tidy-up").toBe("pending");
    openGate(MAKE_NEXT);
    await closed;
    expect(thread.running).toBe(false);
    expect(existsSync(next), "the file made ahead is dropped when the thread stops").toBe(false);
    expect(descriptorsOf(next), "no descriptor of it is left open").toBe(0);
    expect(readdirSync(dir)).toEqual(["a"]);
  });

  it("a put made while the thread still tidies up after the last one waits for it, then lands", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    openGate(UNLINK);
    const next = join(dir, `%tmp.${process.pid}.2.next`);
    await thread.put(join(dir, `%tmp.${process.pid}.1.tidy`), join(dir, "a"), dir, new Uint8Array([1]), true, next);
    expect(thread.canTake(1), "the thread takes the next put once it answered").toBe(true);
    const second = thread.put(next, join(dir, "b"), dir, new Uint8Array([2]), true);
    expect(await settledWithin(second, 200), "the second put waits for the tidy-up that makes its file").toBe("pending");
    openGate(MAKE_NEXT);
    await second;
    await thread.close();
    expect(readdirSync(dir).sort()).toEqual(["a", "b"]);
  });

  it.for(["exit", "end"])(
    "a process that ends (%s) right after a put waits for the thread's tidy-up: no temporary name is left",
    { timeout: loadLimitTimeout(30_000) },
    async (how) => {
      const dir = await tempDir();
      // The child's thread takes 300 ms to make the next put's file; the process ends right after the second put.
      const child = startScript(fileURLToPath(new URL("./fixtures/local-put-exit-tidy.ts", import.meta.url)), [dir, how]);
      expect(await child.exited).toEqual({ code: 0, signal: null });
      expect(child.lines).toContain("put through the thread");
      expect((await readdir(join(dir, "wal%2F"))).sort()).toEqual(["1", "2"]);
    },
  );
});
