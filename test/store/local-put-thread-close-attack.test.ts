/**
 * @module Attacks on the put thread's own life (store/local-put-thread.ts):
 * the thread dying while `close()` waits for the put in flight, and a
 * second `close()` called meanwhile. Each `Worker` the module starts is
 * recorded (the real one, wrapped) so that a test can end it as a crash
 * would, after `close()` already let go of it.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { PutThread, PutThreadStopped } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";

const started = vi.hoisted(() => [] as { terminate(): Promise<number> }[]);
vi.mock("node:worker_threads", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:worker_threads")>();
  class RecordedWorker extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      super(...args);
      started.push(this);
    }
  }
  return { ...real, Worker: RecordedWorker };
});

const tempDir = useTempDirs("taquba-put-thread-close-");

/** Settles with "pending" when `p` has not settled within a few turns of the event loop's timers. */
async function settledSoon(p: Promise<unknown>, ms = 2_000): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve("pending"), ms);
  });
  try {
    return await Promise.race([
      p.then(
        (v) => ({ value: v }),
        (e: unknown) => ({ error: e }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the put thread dying while close() waits", () => {
  it("fails the put in flight with PutThreadStopped, and close() ends, instead of both waiting for ever", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    // Large enough that the crash below comes while the thread still writes or waits for the disk.
    const body = new Uint8Array(256 * 1024).fill(7);
    const put = thread.put(join(dir, `%tmp.${process.pid}.a`), join(dir, "a"), dir, body, true);
    const worker = started.at(-1)!;
    const closed = thread.close();
    // The crash: the thread ends on its own while close() waits for the put.
    await worker.terminate();
    const outcome = await settledSoon(put);
    expect(outcome, "the put must settle once its thread is gone").not.toBe("pending");
    if (typeof outcome === "object" && outcome !== null && "error" in outcome) expect(outcome.error).toBeInstanceOf(PutThreadStopped);
    expect(await settledSoon(closed), "close() must end").toEqual({ value: undefined });
    // A later put starts a thread again (close() turns nothing off) and lands.
    await thread.put(join(dir, `%tmp.${process.pid}.b`), join(dir, "b"), dir, body, true);
    await thread.close();
    expect((await readdir(dir)).filter((n) => n === "b")).toEqual(["b"]);
  });

  it("a second close() while the first waits for the put in flight ends after the thread did", async () => {
    const dir = await tempDir();
    const thread = new PutThread();
    const put = thread.put(join(dir, `%tmp.${process.pid}.c`), join(dir, "c"), dir, new Uint8Array(64 * 1024), true);
    const order: string[] = [];
    const first = thread.close().then(() => order.push("first"));
    const second = thread.close().then(() => order.push("second"));
    await Promise.all([put, first, second]);
    expect(order).toEqual(["first", "second"]);
    expect(thread.running).toBe(false);
  });
});
