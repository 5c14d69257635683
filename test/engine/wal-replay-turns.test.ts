/**
 * @module A WAL replay gives the event loop turns between batches: a writer's
 * open over a long log, and a reader's refresh, whose state is read while it
 * replays and must hold whole commits at every turn.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch } from "taquba";

const COMMITS = 24;
const PAIRS = 1_000;
const noCheckpoints = { checkpointWalObjects: 0, checkpointWalBytes: 0 };
const enc = (s: string) => new TextEncoder().encode(s);

/** Commits `COMMITS` batches, each writing `PAIRS` keys under a/ and the same under b/. */
async function commitPairs(engine: Engine): Promise<void> {
  for (let c = 0; c < COMMITS; c++) {
    const b = new WriteBatch();
    for (let i = 0; i < PAIRS; i++) {
      const id = String(c * PAIRS + i).padStart(6, "0");
      b.put(`a/${id}`, enc(id)).put(`b/${id}`, enc(id));
    }
    await engine.commit(b);
  }
}

/** Runs `fn`, calling `onTurn` at every turn of the event loop (setImmediate) until it settles; resolves to the turns seen. */
async function countTurns<T>(fn: () => Promise<T>, onTurn: () => void = () => {}): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    turns++;
    onTurn();
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await fn(), turns };
  } finally {
    done = true;
  }
}

describe("WAL replay in turns", () => {
  it("a writer's open over a long log lets the event loop turn while it replays, and loses nothing", async () => {
    const store = new MemoryStore();
    const first = await Engine.open(store, noCheckpoints);
    await commitPairs(first);
    await first.close();

    // 48,000 ops in 24 objects, all fetched ahead: replayed in one block of the event loop before
    // (no turn at all), now a turn per 4,096 ops or more, in whole batches (of 2,000 ops here).
    const { result: engine, turns } = await countTurns(() => Engine.open(store, noCheckpoints));
    expect(turns).toBeGreaterThanOrEqual(6);
    let count = 0;
    for (const [k, v] of engine.scan()) {
      expect(new TextDecoder().decode(v)).toBe(k.slice(2));
      count++;
    }
    expect(count).toBe(2 * COMMITS * PAIRS);
    await engine.close();
  });

  it("a reader read between the turns of its refresh sees whole commits only, then all of them", async () => {
    const store = new MemoryStore();
    const writer = await Engine.open(store, noCheckpoints);
    const reader = await EngineReader.open(store);
    await commitPairs(writer);

    const seen: number[] = [];
    const count = (prefix: string) => {
      let n = 0;
      for (const _ of reader.scan({ prefix })) n++;
      return n;
    };
    const { turns } = await countTurns(
      () => reader.refresh(),
      () => {
        const a = count("a/");
        // A commit applied in part would show more keys under one prefix than the other, or a count off the commit size.
        expect(count("b/")).toBe(a);
        expect(a % PAIRS).toBe(0);
        seen.push(a);
      },
    );
    expect(turns).toBeGreaterThanOrEqual(6);
    // Some turns fell inside the replay, not only before and after it.
    expect(seen.some((n) => n > 0 && n < COMMITS * PAIRS)).toBe(true);
    expect(count("a/")).toBe(COMMITS * PAIRS);
    expect(count("b/")).toBe(COMMITS * PAIRS);
    await reader.close();
    await writer.close();
  });

  it("a refresh that fails at a corrupt WAL object part way keeps the whole commits before it, and the next goes on after them: no key shows an older value", async () => {
    const store = new MemoryStore();
    const writer = await Engine.open(store, noCheckpoints);
    const reader = await EngineReader.open(store);
    // Each commit writes PAIRS keys of its own and overwrites "last" with its number.
    for (let c = 0; c < COMMITS; c++) {
      const b = new WriteBatch();
      for (let i = 0; i < 2 * PAIRS; i++) b.put(`a/${String(c * 2 * PAIRS + i).padStart(6, "0")}`, enc("v"));
      await writer.commit(b.put("last", enc(String(c))));
    }
    const wal: string[] = [];
    for await (const o of store.list("wal/")) wal.push(o.key);
    const victim = wal[COMMITS / 2]!;
    const good = (await store.get(victim))!.body;
    await store.put(victim, enc("not a WAL object"));

    const last = () => {
      const v = reader.get("last");
      return v === undefined ? -1 : Number(new TextDecoder().decode(v));
    };
    const seen: number[] = [];
    const wrong: string[] = [];
    const look = () => {
      let keys = 0;
      for (const _ of reader.scan({ prefix: "a/" })) keys++;
      // Whole commits, in order: the keys of commits 0..last and no others.
      if (keys !== (last() + 1) * 2 * PAIRS) wrong.push(`${keys} keys beside "last" = ${last()}`);
      seen.push(last());
    };
    const failed = await countTurns(
      () =>
        reader.refresh().then(
          () => undefined,
          (e: unknown) => e,
        ),
      look,
    );
    expect(failed.result).toBeInstanceOf(StoreCorruptedError);
    expect((failed.result as Error).message).toContain(victim);
    const kept = last();
    expect(kept).toBeGreaterThan(0);
    look();

    await store.put(victim, good);
    seen.length = 0;
    await countTurns(() => reader.refresh(), look);
    look();
    expect(seen.length).toBeGreaterThan(1);
    expect(seen[0]).toBeGreaterThanOrEqual(kept);
    for (let i = 1; i < seen.length; i++) if (seen[i]! < seen[i - 1]!) expect.fail(`"last" went back from ${seen[i - 1]} to ${seen[i]} during the refresh`);
    expect(wrong).toEqual([]);
    expect(last()).toBe(COMMITS - 1);
    await reader.close();
    await writer.close();
  });
});
