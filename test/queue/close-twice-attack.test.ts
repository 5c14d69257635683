/**
 * @module `Queue.close()` called again while a close runs (a signal handler
 * and a `finally` both closing, say) resolves only once the queue is
 * closed: a caller that reopens the store or removes its directory after
 * its own `await close()` must not find the first close still flushing and
 * closing the engine.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, Queue } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-close-twice-");

describe("Queue.close() called twice", () => {
  it("the second call resolves only after the queue closed, as the first", async () => {
    const dir = await tempDir();
    const announced: string[] = [];
    const queue = await Queue.open(new LocalStore(dir), "app", { onClosed: () => announced.push("closed") });
    await queue.enqueue("q", new Uint8Array([1]));
    const first = queue.close();
    const second = queue.close();
    await second;
    expect(announced).toEqual(["closed"]);
    await first;
    // A third call, after: resolves at once, with nothing announced again.
    await queue.close();
    expect(announced).toEqual(["closed"]);
    const reopened = await Queue.open(new LocalStore(dir), "app");
    expect((await reopened.claim("q", 1000))?.payload).toEqual(new Uint8Array([1]));
    await reopened.close();
  });
});
