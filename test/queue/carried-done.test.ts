/**
 * @module Done counts carried by claimed index entries: an ack whose
 * follow-up job is inserted claimed leaves the queue's stats record as it
 * was and counts its done job in the follow-up's `c/` entry. Every reader
 * (the owner's view, a `QueueReader`, after a reopen) sees the same stats
 * at every moment; every way a chained claim ends (ack, nack, dead letter,
 * release, lease expiry, recovery, a cancel's flag before it) moves the
 * count into the stats record; a store whose entries carry nothing (as
 * earlier versions wrote every one) opens and counts as before.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, type ObjectStore, Queue, QueueReader, SettlementEffects, StoreCorruptedError, type ClaimedJob } from "taquba";
import { Engine } from "../../runtime/engine/engine.js";
import { EngineReader } from "../../runtime/engine/engine-reader.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { decodeCarriedDone, decodeStats, encodeCarriedDone, encodeStats, type QueueStats } from "../../runtime/queue/record.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc, openQueue } from "./helpers.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/chain-until-killed.ts", import.meta.url));
const tempDir = useTempDirs("taquba-carried-done-");

const engineStore = (store: ObjectStore, name = "q") => new PrefixedStore(new PrefixedStore(store, `${name}/`), ENGINE_PREFIX);

/** The committed stats record of `queue` and the claimed entries' values, as another process reads the engine. */
async function stored(store: ObjectStore, queue: string, name = "q"): Promise<{ record: QueueStats; entries: number[] }> {
  const r = await EngineReader.open(engineStore(store, name));
  try {
    const record = decodeStats(`n/${queue}`, r.get(`n/${queue}`));
    const entries = [...r.scan({ prefix: `c/${queue}/` })].map(([k, v]) => decodeCarriedDone(k, v));
    return { record, entries };
  } finally {
    await r.close();
  }
}

/** A chain of `length` acks on "steps", each claiming its follow-up; the last follow-up is returned claimed. */
async function chain(queue: Queue, length: number): Promise<ClaimedJob> {
  await queue.enqueue("steps", enc("0"));
  let job = (await queue.claim("steps"))!;
  for (let i = 1; i <= length; i++) {
    job = (await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc(String(i))), { index: 0, reserve: () => true })).next!;
    expect(await queue.view().stats("steps")).toEqual({ pending: 0, scheduled: 0, claimed: 1, done: i, dead: 0 });
  }
  return job;
}

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

describe("done counts carried by claimed entries", () => {
  it("a chain of acks claiming their follow-ups leaves the stats record as it was; the owner, a reader and a reopen count every done job", async () => {
    const { queue, store, clock } = await openQueue();
    await chain(queue, 5);
    await queue.flush();
    // The layout: the stats record still says what the first claim left, the one claimed entry carries the five.
    expect(await stored(store, "steps")).toEqual({ record: stats({ claimed: 1 }), entries: [5] });
    const reader = await QueueReader.open(store, "q", { clock });
    expect(await reader.stats("steps")).toEqual(stats({ claimed: 1, done: 5 }));
    await reader.close();
    await queue.close();
    const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    // Recovery requeues the claim and moves what its entry carried into the stats record.
    expect(await again.view().stats("steps")).toEqual(stats({ pending: 1, done: 5 }));
    await again.flush();
    expect(await stored(store, "steps")).toEqual({ record: stats({ pending: 1, done: 5 }), entries: [] });
    await again.close();
  });

  const endings: Array<[string, (q: Queue, job: ClaimedJob, advance: (ms: number) => void) => Promise<unknown>, QueueStats]> = [
    ["an ack", (q, job) => q.ack(job), stats({ done: 6 })],
    ["an ack with done retention", (q, job) => q.ack(job), stats({ done: 6 })],
    ["a nack", (q, job) => q.nack(job, "boom"), stats({ scheduled: 1, done: 5 })],
    ["a dead letter", (q, job) => q.deadLetter(job, "bad"), stats({ dead: 1, done: 5 })],
    ["a release", async (q, job) => q.releaseClaim(job), stats({ pending: 1, done: 5 })],
    [
      "an expired lease",
      async (q, _job, advance) => {
        advance(60_001);
        await q.runMaintenance();
      },
      stats({ pending: 1, done: 5 }),
    ],
    [
      "a cancel's flag, then an ack",
      async (q, job) => {
        expect(await q.cancel(job.id)).toBe(false);
        expect(await q.view().stats("steps")).toEqual(stats({ claimed: 1, done: 5 }));
        await q.ack(job);
      },
      stats({ done: 6 }),
    ],
  ];

  for (const [what, end, after] of endings) {
    it(`${what} of a chained claim moves what its entry carried into the stats record`, async () => {
      const retained = what.includes("retention");
      const { queue, store, clock } = await openQueue({ queueConfigs: { steps: { leaseMs: 60_000, ...(retained ? { doneRetentionMs: 60_000 } : {}) } } });
      const job = await chain(queue, 5);
      await end(queue, job, (ms) => clock.advance(ms));
      expect(await queue.view().stats("steps")).toEqual(after);
      await queue.flush();
      expect(await stored(store, "steps")).toEqual({ record: after, entries: [] });
      await queue.close();
      const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
      expect(await again.view().stats("steps")).toEqual(after);
      await again.close();
    });
  }

  it("a claimed entry that carries a count keeps it through an ack that claims nothing but enqueues: the stats record takes both", async () => {
    const { queue, store } = await openQueue();
    const job = await chain(queue, 3);
    // A follow-up left pending (the caller declines): the pending count moves, so the stats record is written with all four.
    const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("x")), { index: 0, reserve: () => false });
    expect(res.next).toBeUndefined();
    expect(await queue.view().stats("steps")).toEqual(stats({ pending: 1, done: 4 }));
    await queue.flush();
    expect(await stored(store, "steps")).toEqual({ record: stats({ pending: 1, done: 4 }), entries: [] });
    await queue.close();
  });

  it("a store whose claimed entries carry nothing, as earlier versions wrote them, opens, counts and chains on", async () => {
    const { queue, store, clock } = await openQueue();
    await chain(queue, 4);
    await queue.close();
    // Rewritten as earlier versions left it: every done job in the stats record, the claimed entry empty.
    const engine = await Engine.open(engineStore(store));
    const [entry] = [...engine.scan({ prefix: "c/steps/" })];
    await engine.commit(new WriteBatch().put(entry![0], new Uint8Array(0)).put("n/steps", encodeStats(stats({ claimed: 1, done: 4 }))));
    await engine.close();
    const reader = await QueueReader.open(store, "q", { clock });
    expect(await reader.stats("steps")).toEqual(stats({ claimed: 1, done: 4 }));
    await reader.close();
    const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    expect(again.recovery.requeued).toHaveLength(1);
    expect(await again.view().stats("steps")).toEqual(stats({ pending: 1, done: 4 }));
    let job = (await again.claim("steps"))!;
    job = (await again.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("n")), { index: 0, reserve: () => true })).next!;
    expect(await again.view().stats("steps")).toEqual(stats({ claimed: 1, done: 5 }));
    await again.ack(job);
    expect(await again.view().stats("steps")).toEqual(stats({ done: 6 }));
    await again.close();
  });

  it("recovery keeps the count of a claimed entry whose record is gone; a damaged entry is refused naming it", async () => {
    const { queue, store, clock } = await openQueue();
    await queue.enqueue("steps", enc("a"));
    await queue.close();
    let engine = await Engine.open(engineStore(store));
    await engine.commit(new WriteBatch().put("c/steps/01ORPHAN", encodeCarriedDone(3)));
    await engine.close();
    const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    expect(await again.view().stats("steps")).toEqual(stats({ pending: 1, done: 3 }));
    await again.close();
    engine = await Engine.open(engineStore(store));
    await engine.commit(new WriteBatch().put("c/steps/01DAMAGED", new Uint8Array([0x80])));
    await engine.close();
    const reader = await QueueReader.open(store, "q", { clock });
    await expect(reader.stats("steps")).rejects.toThrow(StoreCorruptedError);
    await expect(reader.stats("steps")).rejects.toThrow(/c\/steps\/01DAMAGED/);
    await reader.close();
  });

  it("the entry's count encodes every integer up to 2^53 - 1 in its shortest form and refuses any other bytes", () => {
    for (const n of [0, 1, 127, 128, 16_383, 16_384, 2 ** 31, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER]) {
      expect(decodeCarriedDone("c/q/x", encodeCarriedDone(n))).toBe(n);
    }
    expect(encodeCarriedDone(127)).toEqual(new Uint8Array([0x7f]));
    expect(encodeCarriedDone(128)).toEqual(new Uint8Array([0x80, 0x01]));
    expect(decodeCarriedDone("c/q/x", new Uint8Array(0))).toBe(0);
    for (const bad of [
      [0x80],
      [0x81, 0x00],
      [0x01, 0x01],
      [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
      [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
    ]) {
      expect(() => decodeCarriedDone("c/q/x", new Uint8Array(bad)), JSON.stringify(bad)).toThrow(StoreCorruptedError);
    }
  });

  it("a child working chains killed with SIGKILL: after recovery the stats equal what its records say was done", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const CHAINS = 6;
      // Long enough that no chain ends before the kill: the recovery then has counts to move.
      const LENGTH = 5000;
      const dir = await tempDir();
      const child = startScript(FIXTURE, [dir, String(CHAINS), String(LENGTH)], { env: { ...process.env, NODE_OPTIONS: "" } });
      await child.waitFor((lines) => lines.length >= 3);
      await child.kill();
      expect(backgroundFailures(child)).toEqual([]);
      const acked = Number(child.lines.at(-1));

      const q = await Queue.open(new LocalStore(dir), "crash", { flushIntervalMs: 0 });
      const recovered = await q.view().stats("chain");
      // The model, from the records: a chain whose job "<c>:<i>" is left did i jobs; one with none left did all.
      const jobs = await q.claimBatch("chain", CHAINS + 1);
      const left = new Map<number, number>();
      for (const job of jobs) {
        const [c, i] = dec(job.payload).split(":").map(Number) as [number, number];
        expect(left.has(c), `chain ${c} has one job left`).toBe(false);
        left.set(c, i);
      }
      let done = 0;
      for (let c = 0; c < CHAINS; c++) done += left.get(c) ?? LENGTH;
      expect(done).toBeGreaterThanOrEqual(acked);
      expect(recovered).toEqual(stats({ pending: jobs.length, done }));
      // Chains under way at the kill carried their counts in their claimed entries: recovery moved them.
      expect(q.recovery.requeued.length).toBeGreaterThan(0);
      await q.close();
    }),
  );
});
