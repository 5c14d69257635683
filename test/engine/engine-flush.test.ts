/**
 * @module A flush resolves once every commit made before it is durable, and
 * not before: with a commit's WAL object still being written it waits for
 * the write, with everything durable it has nothing to wait for, and after
 * a WAL write failed it rejects with the failure, at once and every time.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, MemoryStore, WriteBatch } from "taquba";
import { GatedStore } from "../support/gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** An engine over a store that holds every WAL put until the test releases it. */
async function holdingWal(): Promise<{ gated: GatedStore; engine: Engine }> {
  const gated = new GatedStore(new MemoryStore());
  const engine = await Engine.open(gated, { flushIntervalMs: 0 });
  gated.hold = (k) => k.startsWith("wal/");
  return { gated, engine };
}

/** Whether `p` settled after the reactions and timers so far ran. */
async function settledYet(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((r) => setTimeout(r, 20));
  return settled;
}

describe("engine flush", () => {
  it("waits for a commit whose WAL object is still being written, and resolves after the commit does", async () => {
    const { gated, engine } = await holdingWal();
    const order: string[] = [];
    const commit = engine.commit(new WriteBatch().put("k", enc("v"))).then(() => void order.push("commit"));
    await gated.waitHeld(1);
    const flush = engine.flush().then(() => void order.push("flush"));
    expect(await settledYet(flush)).toBe(false);
    gated.release(gated.held[0]!.key);
    await Promise.all([commit, flush]);
    expect(order).toEqual(["commit", "flush"]);
    // Everything durable: a flush has nothing to wait for, and another commit's object is waited for again.
    await engine.flush();
    const second = engine.commit(new WriteBatch().put("k2", enc("v")));
    await gated.waitHeld(1);
    const again = engine.flush();
    expect(await settledYet(again)).toBe(false);
    gated.release(gated.held[0]!.key);
    await Promise.all([second, again]);
    await engine.close();
  });

  it("waits for a commit made in the same turn, whose WAL object is not yet sealed", async () => {
    const { gated, engine } = await holdingWal();
    await engine.flush();
    const commit = engine.commit(new WriteBatch().put("k", enc("v")));
    const flush = engine.flush();
    await gated.waitHeld(1);
    expect(await settledYet(flush)).toBe(false);
    gated.release(gated.held[0]!.key);
    await Promise.all([commit, flush]);
    await engine.close();
  });

  it("rejects after a WAL write failed, with the failure, at once and every time, also with nothing left to write", async () => {
    const { gated, engine } = await holdingWal();
    const commit = engine.commit(new WriteBatch().put("k", enc("v")));
    await gated.waitHeld(1);
    const key = gated.held[0]!.key;
    const flush = engine.flush();
    // Something else takes the WAL object's name: its put fails and stops the engine.
    await gated.inner.put(key, enc("not a WAL object"));
    gated.release(key);
    const err = await commit.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    await expect(flush).rejects.toBe(err);
    await expect(engine.flush()).rejects.toBeInstanceOf(ClosedError);
    await expect(engine.flush()).rejects.toBeInstanceOf(ClosedError);
    await engine.close();
  });
});
