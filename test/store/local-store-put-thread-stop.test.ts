/**
 * @module LocalStore's put thread stopping under a put (killed, or out of
 * memory): the put fails at once with a retryable error saying so instead
 * of hanging, leaves no temporary file, and the store's later puts go
 * through the thread pool. Its own file: it turns the process's thread off.
 */
import { readdir } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { LocalStore, StoreUnavailableError } from "taquba";
import { sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-put-thread-stop-");
const enc = (s: string) => new TextEncoder().encode(s);

describe("LocalStore's put thread stopping", () => {
  it("fails the put in flight with a retryable error, leaves no temporary file, and puts through the pool from then on", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const thread = sharedPutThread();
    // The directory made through the pool, so that the next put goes straight to the thread.
    await store.put("wal/plain", enc("v"));
    const inFlight = store.put("wal/1", enc("lost?"), { ifNoneMatch: "*" }).catch((e: unknown) => e);
    for (let turns = 0; thread.canTake(1); turns++) {
      if (turns > 100) throw new Error("the put never reached the thread");
      await Promise.resolve();
    }
    await thread.stopForTest();
    const err = await inFlight;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).retryable).toBe(true);
    expect((err as Error).message).toMatch(/the thread making this store's puts stopped .*whether the object was written is unknown/);
    expect((await readdir(`${dir}/wal%2F`)).filter((n) => n.startsWith("%tmp."))).toEqual([]);

    // Later create-if-absent puts go through the pool: they land, and the thread is not started again.
    expect(thread.canTake(1)).toBe(false);
    await store.put("wal/2", enc("two"), { ifNoneMatch: "*" });
    expect(thread.running).toBe(false);
    expect(new TextDecoder().decode((await store.get("wal/2"))!.body)).toBe("two");
    const retried = await store.put("wal/1", enc("again"), { ifNoneMatch: "*" }).then(
      () => "written",
      (e: unknown) => (e as Error).name,
    );
    expect(["written", "PreconditionFailedError"]).toContain(retried);
    expect((await store.get("wal/1"))!.body.length).toBeGreaterThan(0);
  });
});
