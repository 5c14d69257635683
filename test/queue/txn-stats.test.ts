/**
 * @module Stats in a transaction: each commit that moves a job adds its
 * deltas to the stored counts. A transaction reuses the counts the previous
 * one wrote only while the engine holds the same bytes; the engine hands
 * out a fresh array per read of a value it holds packed, so the check is by
 * content, and a count changed behind it is decoded again. Once a read
 * found those bytes, later reads know them by the stored value's token and
 * copy nothing out.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { statsKey } from "../../runtime/queue/keys.js";
import { decodeStats, encodeStats, type JobState } from "../../runtime/queue/record.js";
import { type ReadSource, Txn } from "../../runtime/queue/txn.js";

async function bump(engine: Engine, queue: string, pending: number): Promise<void> {
  const txn = new Txn(engine);
  for (let i = 0; i < pending; i++) txn.move(queue, null, "pending");
  await engine.commit(txn.finish());
}

describe("stats in a transaction", () => {
  for (const [what, pageValues] of [
    ["values held as written", undefined],
    ["values held packed", { keyPrefixes: ["j/"], minBytes: 64 }],
  ] as const) {
    it(`adds to the stored counts, also when they changed behind the last transaction (${what})`, async () => {
      const engine = await Engine.open(new MemoryStore(), pageValues === undefined ? {} : { pageValues });
      await bump(engine, "q", 2);
      await bump(engine, "q", 3);
      expect(decodeStats(statsKey("q"), engine.get(statsKey("q")))).toMatchObject({ pending: 5 });
      // Another write of the counts, not through a transaction (as a stats repair would): the next one starts from it.
      await engine.commit(new WriteBatch().put(statsKey("q"), encodeStats({ pending: 40, scheduled: 1, claimed: 2, done: 3, dead: 4 })));
      await bump(engine, "q", 1);
      expect(decodeStats(statsKey("q"), engine.get(statsKey("q")))).toEqual({ pending: 41, scheduled: 1, claimed: 2, done: 3, dead: 4 });
      // Deleted behind it: counting starts from zero.
      await engine.commit(new WriteBatch().delete(statsKey("q")));
      await bump(engine, "q", 1);
      expect(decodeStats(statsKey("q"), engine.get(statsKey("q")))).toEqual({ pending: 1, scheduled: 0, claimed: 0, done: 0, dead: 0 });
      // Queues keep counts of their own.
      await bump(engine, "r", 7);
      await bump(engine, "q", 1);
      expect(decodeStats(statsKey("r"), engine.get(statsKey("r"))).pending).toBe(7);
      expect(decodeStats(statsKey("q"), engine.get(statsKey("q"))).pending).toBe(2);
      await engine.close();
    });
  }

  for (const [what, pageValues] of [
    ["values held as written", undefined],
    ["values held packed", { keyPrefixes: ["j/"], minBytes: 64 }],
  ] as const) {
    it(`reads counts no commit changed since by their token, and counts changed behind it again (${what})`, async () => {
      const engine = await Engine.open(new MemoryStore(), pageValues === undefined ? {} : { pageValues });
      const key = statsKey("q");
      // The engine's reads, counting those of the stats key (the transactions' cache is per source).
      let reads = 0;
      const src: ReadSource = {
        get: (k) => {
          if (k === key) reads++;
          return engine.get(k);
        },
        has: (k) => engine.has(k),
        scan: (o) => engine.scan(o),
        valueToken: (k) => engine.valueToken(k),
        copiesValues: engine.copiesValues,
      };
      const pendingNow = () => new Txn(src).pendingCount("q");
      const moveIn = async (n: number) => {
        const txn = new Txn(src);
        for (let i = 0; i < n; i++) txn.move("q", null, "pending");
        await engine.commit(txn.finish());
      };
      // Each count read, and how many reads of the stats key the engine made for it.
      const counted = () => {
        const before = reads;
        const n = pendingNow();
        return [n, reads - before];
      };
      await moveIn(2);
      // The first read after a write compares the bytes; later ones know the same stored value by its token.
      expect([counted(), counted(), counted()]).toEqual([
        [2, 1],
        [2, 0],
        [2, 0],
      ]);
      // Other counts written behind the transactions: read and decoded, whatever token the last read saw.
      await engine.commit(new WriteBatch().put(key, encodeStats({ pending: 40, scheduled: 1, claimed: 2, done: 3, dead: 4 })));
      expect([counted(), counted()]).toEqual([
        [40, 1],
        [40, 1],
      ]);
      // The counts the last transaction wrote, written again behind it: a new array, read and found the same (packed,
      // the same bytes make an equal string, so the same token).
      await engine.commit(new WriteBatch().put(key, encodeStats({ pending: 2, scheduled: 0, claimed: 0, done: 0, dead: 0 })));
      expect([counted(), counted()]).toEqual([
        [2, pageValues === undefined ? 1 : 0],
        [2, 0],
      ]);
      await moveIn(3);
      expect([counted(), counted()]).toEqual([
        [5, 1],
        [5, 0],
      ]);
      // Deleted behind them: no counts.
      await engine.commit(new WriteBatch().delete(key));
      expect(pendingNow()).toBe(0);
      // A transaction that moved a job reads the stored counts once, and adds its own.
      const txn = new Txn(src);
      txn.move("q", null, "pending");
      expect([txn.pendingCount("q"), txn.pendingCount("q")]).toEqual([1, 1]);
      await engine.close();
    });
  }

  it("moves each state's own count, in and out of every state, across queues in one transaction", async () => {
    const engine = await Engine.open(new MemoryStore());
    await engine.commit(new WriteBatch().put(statsKey("q"), encodeStats({ pending: 10, scheduled: 20, claimed: 30, done: 40, dead: 50 })));
    const txn = new Txn(engine);
    const moves: [string, JobState | null, JobState | null][] = [
      ["q", null, "pending"],
      ["q", "pending", "claimed"],
      ["q", "claimed", "done"],
      ["q", "scheduled", "pending"],
      ["q", "claimed", "dead"],
      ["q", "dead", null],
      ["q", "scheduled", null],
      // Done only grows: leaving it takes nothing off.
      ["q", "done", null],
      ["r", null, "scheduled"],
      ["r", "scheduled", "claimed"],
      ["r", null, "dead"],
    ];
    for (const [queue, from, to] of moves) txn.move(queue, from, to);
    txn.bumpDone("r", 3);
    expect([txn.countOf("q", "pending"), txn.countOf("q", "scheduled"), txn.countOf("q", "claimed"), txn.countOf("q", "dead")]).toEqual([11, 18, 29, 50]);
    expect(txn.pendingCount("q")).toBe(11);
    expect([txn.countOf("r", "scheduled"), txn.countOf("r", "claimed"), txn.countOf("r", "dead")]).toEqual([0, 1, 1]);
    await engine.commit(txn.finish());
    expect(decodeStats(statsKey("q"), engine.get(statsKey("q")))).toEqual({ pending: 11, scheduled: 18, claimed: 29, done: 41, dead: 50 });
    expect(decodeStats(statsKey("r"), engine.get(statsKey("r")))).toEqual({ pending: 0, scheduled: 0, claimed: 1, done: 3, dead: 1 });
    await engine.close();
  });
});
