/**
 * @module Taking over from a writer that keeps committing: after the claim,
 * the opener plants its fence at the end of the log, and a writer still
 * committing may take that place first each time. The open then ends within
 * a bound, either as the writer (the old one fenced) or with a retryable
 * StoreUnavailableError saying the log kept changing; it never hangs, and
 * once the old writer stops, an open takes over with every acknowledged
 * commit.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, MemoryStore, type ObjectStore, StoreUnavailableError, TaqubaError, WriteBatch } from "taquba";
import { MAX_FENCE_RACES } from "../../runtime/engine/open-writer.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

/** `inner`, running `beforeWalPut` (awaited) before each create of a WAL object: the opener's fence. */
function beforeWalPuts(inner: ObjectStore, beforeWalPut: () => Promise<void>): ObjectStore {
  return {
    get: inner.get.bind(inner),
    put: async (k, body, opts) => {
      if (k.startsWith("wal/")) await beforeWalPut();
      return inner.put(k, body, opts);
    },
    delete: inner.delete.bind(inner),
    list: inner.list.bind(inner),
  };
}

/** Settles with `p`, or rejects once `ms` passed: a hang fails the test instead of timing it out. */
function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe("opening over a writer that keeps committing", () => {
  it("gives up with a retryable error when the old writer takes the fence's place every time, and wins once it stopped", async () => {
    const store = new MemoryStore();
    const old = await Engine.open(store, { checkpointWalObjects: 0, flushIntervalMs: 0 });
    await old.commit(new WriteBatch().put("before", enc("0")));
    const acked: number[] = [];
    let n = 0;
    // Before each fence put, the old writer commits once more: its WAL object takes the place the fence was going to.
    const racing = beforeWalPuts(store, async () => {
      const i = n++;
      await old.commit(new WriteBatch().put(`busy${i}`, enc(String(i))));
      acked.push(i);
    });
    const err = await within(20_000, Engine.open(racing)).then(
      async (e) => {
        await e.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as TaqubaError).retryable).toBe(true);
    expect((err as Error).message).toContain(`the log kept changing under the fence: another writer appended to it first, ${MAX_FENCE_RACES} times in a row`);
    expect((err as Error).message).toContain("stop it (close or end it), then open again");
    expect(acked.length).toBe(MAX_FENCE_RACES);

    // The claim stayed: the old writer's next checkpoint fails, and it stops.
    await expect(old.checkpoint()).rejects.toBeInstanceOf(FencedError);
    await old.close().catch(() => {});
    const next = await within(20_000, Engine.open(store));
    expect(dec(next.get("before"))).toBe("0");
    for (const i of acked) expect(dec(next.get(`busy${i}`)), `busy${i}`).toBe(String(i));
    await next.close();
  });

  it("against a writer committing in a loop, ends within a bound: as the writer, or with a retryable error", async () => {
    const store = new MemoryStore();
    const old = await Engine.open(store, { checkpointWalObjects: 0, flushIntervalMs: 0 });
    const acked: number[] = [];
    let stop = false;
    let oldError: unknown;
    const loop = (async () => {
      for (let i = 0; !stop; i++) {
        try {
          await old.commit(new WriteBatch().put(`loop${i}`, enc(String(i))));
          acked.push(i);
        } catch (err) {
          oldError = err;
          return;
        }
      }
    })();
    // Let the loop run before the open starts.
    while (acked.length < 50) await new Promise((r) => setImmediate(r));
    const outcome = await within(20_000, Engine.open(store)).then(
      (e) => ({ opened: e }),
      (e: unknown) => ({ refused: e }),
    );
    stop = true;
    await loop;
    if ("opened" in outcome) {
      // The old writer was fenced, and every commit it acknowledged is in the new writer's state.
      expect(oldError).toBeInstanceOf(FencedError);
      for (const i of acked) expect(dec(outcome.opened.get(`loop${i}`)), `loop${i}`).toBe(String(i));
      await outcome.opened.close();
    } else {
      expect(outcome.refused).toBeInstanceOf(StoreUnavailableError);
      expect((outcome.refused as TaqubaError).retryable).toBe(true);
    }
    await old.close().catch(() => {});
  });
});
