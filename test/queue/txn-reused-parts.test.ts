/**
 * @module What a commit's queue side reuses instead of making afresh: a
 * transaction's stats slots (taken again by later transactions once one
 * finished), the parts arrays keys are joined from, and the one-byte done
 * counts a claimed entry carries. Each transaction still starts from its
 * own queue's stored counts, each key is the one its parts name, and a
 * shared count's bytes are the same on every use.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import * as K from "../../runtime/queue/keys.js";
import { decodeCarriedDone, decodeStats, encodeCarriedDone, encodeStats, type QueueStats } from "../../runtime/queue/record.js";
import { Txn } from "../../runtime/queue/txn.js";
import { testRandom } from "../support/seed.js";

const stats = (engine: Engine, queue: string): QueueStats => decodeStats(K.statsKey(queue), engine.get(K.statsKey(queue)));

describe("a transaction's stats slots, taken again", () => {
  it("start each transaction from its own queue's stored counts, with no move of an earlier one", async () => {
    const engine = await Engine.open(new MemoryStore());
    const a = new Txn(engine);
    for (let i = 0; i < 3; i++) a.move("a", null, "pending");
    a.move("b", null, "claimed");
    expect(a.pendingCount("a")).toBe(3);
    await engine.commit(a.finish());

    // A slot let go by `a` serves another queue: it names that queue and counts from zero.
    const b = new Txn(engine);
    b.move("c", null, "dead");
    await engine.commit(b.finish());
    expect(stats(engine, "c")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 1 });
    expect(stats(engine, "a")).toMatchObject({ pending: 3, claimed: 0 });
    expect(stats(engine, "b")).toMatchObject({ pending: 0, claimed: 1 });

    // Dropped without `finish`: its moves reach no later transaction.
    const dropped = new Txn(engine);
    dropped.move("a", null, "scheduled");
    dropped.bumpDone("a", 9);

    // The stored counts a slot read are not those of the next transaction on the queue: changed behind it, they are read again.
    const reader = new Txn(engine);
    reader.move("a", "pending", "claimed");
    expect(reader.pendingCount("a")).toBe(2);
    await engine.commit(reader.finish());
    await engine.commit(new WriteBatch().put(K.statsKey("a"), encodeStats({ pending: 40, scheduled: 0, claimed: 7, done: 5, dead: 0 })));
    const after = new Txn(engine);
    after.move("a", null, "pending");
    expect(after.pendingCount("a")).toBe(41);
    expect(after.countOf("a", "claimed")).toBe(7);
    await engine.commit(after.finish());
    expect(stats(engine, "a")).toEqual({ pending: 41, scheduled: 0, claimed: 7, done: 5, dead: 0 });
    await engine.close();
  });

  it("count each queue of a transaction that moves several, again and again", async () => {
    const engine = await Engine.open(new MemoryStore());
    const { random: rand } = testRandom("stats slots, several queues");
    const queues = ["q0", "q1", "q2", "q3", "q4", "q5"];
    const model = new Map<string, number>();
    for (let round = 0; round < 40; round++) {
      const txn = new Txn(engine);
      const moved = queues.filter(() => rand() < 0.5);
      for (const q of moved) {
        const n = 1 + Math.floor(rand() * 3);
        for (let i = 0; i < n; i++) txn.move(q, null, "pending");
        model.set(q, (model.get(q) ?? 0) + n);
        expect(txn.pendingCount(q)).toBe(model.get(q));
      }
      await engine.commit(txn.finish());
    }
    for (const q of queues) expect(stats(engine, q).pending).toBe(model.get(q) ?? 0);
    await engine.close();
  });
});

describe("keys joined from reused parts", () => {
  it("are the keys their parts name, built in any order", () => {
    const { random: rand } = testRandom("keys from reused parts");
    const word = () => Math.floor(rand() * 36 ** 6).toString(36);
    for (let i = 0; i < 200; i++) {
      const [q, id, other] = [word(), word().toUpperCase(), word()];
      const t = Math.floor(rand() * 2 ** 40);
      const built: [string, string][] = [
        [K.jobKey(id), `j/${id}`],
        [K.claimedKey(q, id), `c/${q}/${id}`],
        [K.pendingKey(q, 7, id), `p/${q}/0000000007/${id}`],
        [K.historyKey(id), `h/${id}`],
        [K.scheduledKey(t, q, id), `s/${String(t).padStart(16, "0")}/${q}/${id}`],
        [K.deadKey(q, other), `d/${q}/${other}`],
        [K.doneKey(q, t, id), `o/${q}/${String(t).padStart(16, "0")}/${id}`],
        [K.retentionKey(t + 1, id), `r/${String(t + 1).padStart(16, "0")}/${id}`],
        [K.dedupKey(q, other), `k/${q}/${other}`],
        [K.debounceKey(q, other), `b/${q}/${other}`],
        [K.supersededKey(id), `v/${id}`],
        [K.payloadRefKey(other), `y/${other}`],
        [K.userKey(other), `u/${other}`],
      ];
      // Shuffled rebuilds: a key does not depend on which was built before it.
      for (const [key, expected] of built.sort(() => rand() - 0.5)) expect(key).toBe(expected);
    }
  });
});

describe("one-byte carried counts, shared", () => {
  it("are the same bytes on every use, and counts past them are arrays of their own", () => {
    for (let n = 0; n < 128; n++) {
      const first = encodeCarriedDone(n);
      expect([...first]).toEqual([n]);
      expect([...encodeCarriedDone(n)]).toEqual([n]);
      expect(decodeCarriedDone("c/q/x", first)).toBe(n);
    }
    expect(encodeCarriedDone(300)).not.toBe(encodeCarriedDone(300));
    expect([...encodeCarriedDone(300)]).toEqual([0xac, 0x02]);
  });
});
