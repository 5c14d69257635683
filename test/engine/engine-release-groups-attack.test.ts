/**
 * @module Attacks on the WAL release by groups (wal-writer.ts) after slow
 * puts: WAL puts held and let go in random order, some failing (before or
 * after their object is stored), flushes and a close issued while groups
 * wait. Whatever happens, no commit is acknowledged before its WAL object
 * and every earlier one are stored, every acknowledged commit is there
 * after a reopen, every commit and flush settles (a rejection is a typed
 * error), and nothing hangs.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, TaqubaError, WriteBatch, type ObjectStore, type PutOptions } from "taquba";
import { walKey } from "../../runtime/engine/layout.js";
import { decodeWal } from "../../runtime/engine/wal-format.js";
import { everyPutSlow } from "../support/every-put-slow.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const WAL = /^wal\/(\d+)$/;

interface Held {
  key: string;
  /** Lets the put go to the store: `after` fails it once stored, as a put whose answer was lost. */
  go(after?: Error): void;
  /** Fails the put without storing it. */
  fail(err: Error): void;
}

/** Holds every WAL put until the test lets it go or fails it; notes what was stored. */
class HeldWal {
  readonly held: Held[] = [];
  readonly stored = new Set<string>();
  readonly store: ObjectStore;
  /** Off while the engine opens (its fence object goes straight through). */
  holding = false;
  /** The smallest sequence number put while holding: the writer's first. */
  firstSeq = Number.POSITIVE_INFINITY;

  constructor(readonly inner: MemoryStore) {
    const puts = async (key: string, body: Uint8Array, opts?: PutOptions) => {
      if (!this.holding || !WAL.test(key)) return inner.put(key, body, opts);
      this.firstSeq = Math.min(this.firstSeq, Number(WAL.exec(key)![1]));
      const order = await new Promise<Error | { after?: Error }>((resolve) => {
        this.held.push({ key, go: (after) => resolve({ after }), fail: (err) => resolve(err) });
      });
      if (order instanceof Error) throw order;
      const r = await inner.put(key, body, opts);
      this.stored.add(key);
      if (order.after) throw order.after;
      return r;
    };
    this.store = { get: (k) => inner.get(k), put: puts, delete: (k) => inner.delete(k), list: (p, o) => inner.list(p, o) };
  }

  take(rng: TestRandom): Held | undefined {
    if (this.held.length === 0) return undefined;
    return this.held.splice(rng.int(this.held.length), 1)[0];
  }
}

async function turn(): Promise<void> {
  await new Promise<void>((r) => setImmediate(r));
}

/** The sequence number of the WAL object in `store` that put each key. */
async function walContents(store: MemoryStore): Promise<Map<string, number>> {
  const seqOf = new Map<string, number>();
  for await (const o of store.list("wal/")) {
    const seq = Number(WAL.exec(o.key)![1]);
    const got = await store.get(o.key);
    const wal = decodeWal(o.key, got!.body, seq);
    if (wal.kind !== "batches") continue;
    for (const batch of wal.batches) for (const op of batch) seqOf.set(op.key, seq);
  }
  return seqOf;
}

type Fault = "none" | "fail" | "fail after storing";

describe("WAL release by groups under faults", () => {
  everyPutSlow();

  for (const [fault, ending] of [
    ["none", "close"],
    ["fail", "close"],
    ["fail after storing", "close"],
    ["fail", "flush"],
    ["none", "flush"],
  ] as [Fault, "close" | "flush"][]) {
    it(`random landing order, fault: ${fault}, ending with ${ending}: acknowledged only when stored in order, none lost, all settle`, async () => {
      for (let round = 0; round < 6; round++) {
        const rng = testRandom(`release groups attack (${fault}, ${ending}, round ${round})`);
        const inner = new MemoryStore();
        const wal = new HeldWal(inner);
        const engine = await Engine.open(wal.store, {
          flushIntervalMs: rng.int(2) === 0 ? 0 : 10_000,
          maxInflightWalPuts: 1 + rng.int(4),
          checkpointWalObjects: 0,
          checkpointWalBytes: 0,
          retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
        });
        wal.holding = true;
        // Every WAL object from the writer's first (after its open's fence) up to this one was stored.
        let storedUpTo = Number.NaN;
        const stored = () => {
          if (Number.isNaN(storedUpTo)) storedUpTo = wal.firstSeq - 1;
          while (wal.stored.has(walKey("", storedUpTo + 1))) storedUpTo++;
          return storedUpTo;
        };
        // At each acknowledgement: up to which sequence number every WAL object was stored then.
        const acked = new Map<string, number>();
        const settled: Promise<unknown>[] = [];
        const outcomes: unknown[] = [];
        let stop = false;
        let n = 0;
        const writer = (w: number): Promise<void> => {
          if (stop) return Promise.resolve();
          const key = `w${w}/${n++}`;
          const p = engine.commit(new WriteBatch().put(key, enc(key)));
          return p.then(
            () => {
              acked.set(key, stored());
              return writer(w);
            },
            (err: unknown) => void outcomes.push(err),
          );
        };
        const writers = Array.from({ length: 40 + rng.int(60) }, (_, w) => writer(w));
        const flushes: Promise<void>[] = [];
        let faulted = false;
        for (let step = 0; step < 120; step++) {
          await turn();
          const act = rng.int(10);
          if (act < 6) {
            const h = wal.take(rng);
            if (h === undefined) continue;
            if (!faulted && fault !== "none" && step > 20 && rng.int(8) === 0) {
              faulted = true;
              if (fault === "fail") h.fail(new Error("the store refused this put"));
              else h.go(new Error("the answer to this put was lost"));
            } else h.go();
          } else if (act < 8) {
            const f = engine.flush();
            flushes.push(f);
            settled.push(f.catch((err: unknown) => void outcomes.push(err)));
          }
        }
        // The ending: a close (or a flush) while groups wait, then let every held put go.
        stop = true;
        const end = ending === "close" ? engine.close() : engine.flush().then(() => engine.close());
        settled.push(end.catch((err: unknown) => void outcomes.push(err)));
        for (let i = 0; i < 10_000; i++) {
          const h = wal.take(rng);
          if (h !== undefined) h.go();
          await turn();
          if (wal.held.length === 0 && i > 50) break;
        }
        await Promise.all([...writers, ...settled]);
        await engine.close();
        // Every rejection is a typed error.
        for (const err of outcomes) expect(err, String(err)).toBeInstanceOf(TaqubaError);
        if (fault === "none") expect(outcomes).toEqual([]);
        // Acknowledged only once its WAL object and every earlier one (of this writer) were stored.
        const seqOf = await walContents(inner);
        for (const [key, storedThen] of acked) {
          const seq = seqOf.get(key);
          expect(seq, `acknowledged ${key} is in a stored WAL object`).toBeDefined();
          expect(seq!, `${key} (WAL ${seq}) acknowledged when every WAL object was stored only up to ${storedThen}`).toBeLessThanOrEqual(storedThen);
        }
        // None lost: a reopen holds every acknowledged commit.
        const reopened = await Engine.open(inner);
        for (const key of acked.keys()) expect(reopened.get(key), key).toEqual(enc(key));
        await reopened.close();
        expect(acked.size).toBeGreaterThan(0);
      }
    });
  }
});
