/**
 * @module A transaction's reads of its own writes, and its stats puts, over
 * seeded sequences of puts, deletes and moves: short batches are searched
 * op by op and longer ones through an index made part way, so every read
 * is checked against a model before, across and after that point, and the
 * committed bytes against what the model says the engine must hold.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore } from "taquba";
import { statsKey } from "../../runtime/queue/keys.js";
import { decodeStats, encodeStats, type QueueStats } from "../../runtime/queue/record.js";
import { Txn } from "../../runtime/queue/txn.js";
import type { OwnedBytes } from "../../runtime/queue/owned-bytes.js";
import { testRandom } from "../support/seed.js";

const STATES = ["pending", "scheduled", "claimed", "done", "dead"] as const;
const QUEUES = ["q", "r", "s"];

const bytesOf = (n: number) => new Uint8Array([n & 0xff, n >> 8]) as OwnedBytes;

describe("a transaction's own writes", () => {
  it("reads each key as the transaction last wrote it, before and after it indexes its ops", async () => {
    const rnd = testRandom("txn own writes");
    const engine = await Engine.open(new MemoryStore());
    try {
      // Committed values a transaction reads through when it has not written the key.
      const committed = new Map<string, Uint8Array>();
      const seedTxn = new Txn(engine);
      for (let k = 0; k < 12; k += 2) {
        seedTxn.put(`k/${k}`, bytesOf(1000 + k));
        committed.set(`k/${k}`, bytesOf(1000 + k));
      }
      await engine.commit(seedTxn.finish());
      for (let round = 0; round < 40; round++) {
        const txn = new Txn(engine);
        const model = new Map<string, Uint8Array | null>();
        const ops = 1 + rnd.int(60);
        for (let i = 0; i < ops; i++) {
          const key = `k/${rnd.int(14)}`;
          if (rnd.random() < 0.3) {
            txn.delete(key);
            model.set(key, null);
          } else {
            const v = bytesOf(round * 100 + i);
            txn.put(key, v);
            model.set(key, v);
          }
          // Every key read after every op: the index, once made, must follow later writes.
          for (let k = 0; k < 14; k++) {
            const probe = `k/${k}`;
            const own = model.get(probe);
            const want = own === undefined ? committed.get(probe) : (own ?? undefined);
            expect(txn.get(probe), `round ${round}, op ${i}, key ${probe}`).toEqual(want);
            expect(txn.has(probe)).toBe(want !== undefined);
          }
        }
        await engine.commit(txn.finish(), { durable: false });
        for (const [key, v] of model) {
          if (v === null) committed.delete(key);
          else committed.set(key, v);
        }
        for (let k = 0; k < 14; k++) expect(engine.get(`k/${k}`)).toEqual(committed.get(`k/${k}`));
      }
    } finally {
      await engine.close();
    }
  });

  it("puts each moved queue's counts once, in the order the queues first moved, skipping moves that cancel out", async () => {
    const rnd = testRandom("txn stats moves");
    const engine = await Engine.open(new MemoryStore());
    try {
      const model = new Map<string, QueueStats>(QUEUES.map((q) => [q, { pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 }]));
      for (let round = 0; round < 30; round++) {
        const txn = new Txn(engine);
        const delta = new Map<string, QueueStats>();
        const order: string[] = [];
        const moves = rnd.int(8);
        for (let i = 0; i < moves; i++) {
          const queue = QUEUES[rnd.int(QUEUES.length)]!;
          const from = rnd.random() < 0.2 ? null : STATES[rnd.int(STATES.length)]!;
          const to = rnd.random() < 0.2 ? null : STATES[rnd.int(STATES.length)]!;
          // A move from zero would count below zero; the model keeps every count whole.
          if (from !== null && from !== "done" && model.get(queue)![from] + (delta.get(queue)?.[from] ?? 0) < 1) continue;
          txn.move(queue, from, to);
          let d = delta.get(queue);
          if (d === undefined) {
            d = { pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 };
            delta.set(queue, d);
          }
          if (from !== null && from !== "done") d[from]--;
          if (to !== null) d[to]++;
          if (!order.includes(queue) && ((from !== null && from !== "done") || to !== null)) order.push(queue);
          expect(txn.pendingCount(queue)).toBe(model.get(queue)!.pending + d.pending);
          // A queue only read is not put.
          const other = QUEUES[rnd.int(QUEUES.length)]!;
          expect(txn.pendingCount(other)).toBe(model.get(other)!.pending + (delta.get(other)?.pending ?? 0));
        }
        const batch = txn.finish();
        const expectedPuts: [string, Uint8Array][] = [];
        for (const queue of order) {
          const d = delta.get(queue)!;
          if (STATES.every((s) => d[s] === 0)) continue;
          const m = model.get(queue)!;
          for (const s of STATES) m[s] += d[s];
          expectedPuts.push([statsKey(queue), encodeStats(m)]);
        }
        expect(batch.ops.map((op) => [op.key, op.kind === "put" ? op.value : null])).toEqual(expectedPuts);
        // A second finish adds nothing.
        expect(txn.finish().ops.length).toBe(expectedPuts.length);
        await engine.commit(batch, { durable: false });
        for (const queue of QUEUES) {
          const stored = engine.get(statsKey(queue));
          if (stored !== undefined) expect(decodeStats(statsKey(queue), stored)).toEqual(model.get(queue));
        }
      }
    } finally {
      await engine.close();
    }
  });
});
