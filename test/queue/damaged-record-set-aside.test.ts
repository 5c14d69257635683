/**
 * @module A damaged job record (bytes cut short, fields of another kind, a
 * record naming another job or another queue, another queue's record copied
 * in) among good jobs, over a real MemoryStore and LocalStore, damaged while
 * the queue is closed and read after a reopen: a claim sets the job aside
 * as dead with the reason `record_corrupted` and goes on to the next good
 * job in the same call; every good job, before and after it, is claimed and
 * done; the stats equal a model of the jobs, also after another reopen; a
 * worker runs through it; the job's view names it; a cancel removes it. A
 * job a stopped process held claimed, damaged before the next open, is set
 * aside by that open's recovery instead of failing it.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import {
  type DeadLetteredEvent,
  Engine,
  LocalStore,
  MemoryStore,
  MockClock,
  type ObjectStore,
  Queue,
  type QueueStats,
  runWorker,
  TaqubaError,
  WriteBatch,
} from "taquba";
import { jobKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { dec, enc } from "./helpers.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const packed = (v: unknown) => new Uint8Array(general.pack(v));
const tempDir = useTempDirs("taquba-damaged-record-");
const T0 = 1_764_000_000_000;

/** A way a stored record is damaged: its new bytes from its own and another queue's record, and what the dead job's error says. */
interface Damage {
  what: string;
  bytes(own: Uint8Array, other: Uint8Array): Uint8Array;
  says: RegExp;
}

function rewritten(own: Uint8Array, change: (r: Record<string, unknown>) => void): Uint8Array {
  const r = general.unpack(own) as Record<string, unknown>;
  change(r);
  return packed(r);
}

const DAMAGES: Damage[] = [
  // Cut inside the headers, which follow the payload: the payload is read whole, the headers are not.
  { what: "bytes cut short", bytes: (own) => own.subarray(0, own.length - 12), says: /undecodable record/ },
  { what: "bytes cut to the map's head", bytes: (own) => own.subarray(0, 2), says: /undecodable record/ },
  { what: "an attempt count as text", bytes: (own) => rewritten(own, (r) => (r.attempts = "0")), says: /its attempts is not a number/ },
  { what: "a priority as text", bytes: (own) => rewritten(own, (r) => (r.priority = "high")), says: /its priority is not a number/ },
  { what: "headers as a list", bytes: (own) => rewritten(own, (r) => (r.headers = ["a"])), says: /its headers is not a map of strings/ },
  { what: "an id naming another job", bytes: (own) => rewritten(own, (r) => (r.id = "someone-else")), says: /naming job "someone-else"/ },
  { what: "a queue naming another queue", bytes: (own) => rewritten(own, (r) => (r.queue = "other")), says: /a job record of queue "other"/ },
  { what: "another queue's record copied in", bytes: (_own, other) => other, says: /naming job "o1"/ },
];

const STORES: [string, () => Promise<ObjectStore>][] = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
];

/** The queue's engine opened over `store` while no queue has it open, as another writer of the store would. */
function engineOf(store: ObjectStore): Promise<Engine> {
  return Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
}

/** Rewrites the record of job `id` by `damage`, the queue closed. */
async function damageRecord(store: ObjectStore, id: string, damage: Damage): Promise<Uint8Array> {
  const engine = await engineOf(store);
  const bytes = damage.bytes(engine.get(jobKey(id))!, engine.get(jobKey("o1"))!);
  await engine.commit(new WriteBatch().put(jobKey(id), bytes));
  await engine.close();
  return bytes;
}

function open(store: ObjectStore, clock: MockClock, dead: DeadLetteredEvent[]): Promise<Queue> {
  return Queue.open(store, "q", { clock, flushIntervalMs: 0, onDeadLettered: (e) => void dead.push(e) });
}

/** Enqueues g1..g4 around the victim (g1, g2, victim, g3, g4 in claim order) and o1 in queue "other". */
async function fill(queue: Queue): Promise<void> {
  for (const id of ["g1", "g2", "victim", "g3", "g4"]) await queue.enqueue("w", enc(`payload of ${id}`), { jobId: id, headers: { "x-job": id } });
  await queue.enqueue("other", enc("payload of o1"), { jobId: "o1", headers: { "x-job": "o1" } });
}

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

describe.each(STORES)("a damaged job record over a %s", (_store, makeStore) => {
  it.each(DAMAGES)("with $what is set aside as dead and every good job claimed and done", async (damage) => {
    const store = await makeStore();
    const clock = new MockClock(T0);
    const dead: DeadLetteredEvent[] = [];
    let queue = await open(store, clock, dead);
    await fill(queue);
    // A good job before it is done before the damage.
    const first = await queue.claim("w", 30_000);
    expect(first?.id).toBe("g1");
    await queue.ack(first!);
    await queue.close();

    const bytes = await damageRecord(store, "victim", damage);
    queue = await open(store, clock, dead);
    try {
      const done: string[] = [];
      // One job per claim: the claim after g2 meets the damaged record first and goes on to g3 in the same call.
      for (let job = await queue.claim("w", 30_000); job !== null; job = await queue.claim("w", 30_000)) {
        expect(dec(job.payload)).toBe(`payload of ${job.id}`);
        await queue.ack(job);
        done.push(job.id);
      }
      expect(done).toEqual(["g2", "g3", "g4"]);
      expect(await queue.view().stats("w")).toEqual(stats({ done: 4, dead: 1 }));
      // Another queue's job, whose record was copied, is its queue's as before.
      expect(await queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      const o1 = await queue.claim("other", 30_000);
      expect(o1?.id).toBe("o1");
      await queue.ack(o1!);
      expect(await queue.view().stats("other")).toEqual(stats({ done: 1 }));

      const info = await queue.view().job("victim");
      expect(info).toMatchObject({ id: "victim", queueName: "w", state: "dead" });
      expect(info?.lastError).toMatch(/^record_corrupted: the stored record of job victim could not be read/);
      expect(info?.lastError).toMatch(damage.says);
      // The damaged bytes' start, for inspection.
      expect(info?.lastError).toContain(Buffer.from(bytes.subarray(0, 16)).toString("hex"));
      expect(info?.lastError).not.toMatch(/j\/victim/);
      expect((await queue.view().deadJobs("w")).map((j) => j.id)).toEqual(["victim"]);
      await until("the set-aside announced", async () => dead.length === 1);
      expect(dead[0]).toMatchObject({ jobId: "victim", queueName: "w", reason: "record_corrupted" });
      // A second claim finds nothing left to set aside.
      expect(await queue.claim("w", 30_000)).toBeNull();
    } finally {
      await queue.close();
    }

    // After a restart the set-aside stands: the same dead job, the same counts.
    queue = await open(store, clock, dead);
    try {
      expect(await queue.view().stats("w")).toEqual(stats({ done: 4, dead: 1 }));
      expect(await queue.view().stats("other")).toEqual(stats({ done: 1 }));
      expect((await queue.view().job("victim"))?.state).toBe("dead");
      expect(await queue.claim("w", 30_000)).toBeNull();
      expect(dead).toHaveLength(1);
    } finally {
      await queue.close();
    }
  });

  it("keeps what can be read of a record whose field is of another kind: its headers and payload", async () => {
    const store = await makeStore();
    const clock = new MockClock(T0);
    let queue = await open(store, clock, []);
    await fill(queue);
    await queue.close();
    await damageRecord(store, "victim", DAMAGES[2]!);
    queue = await open(store, clock, []);
    try {
      expect((await queue.claim("w", 30_000))?.id).toBe("g1");
      // A batch sets the damaged one aside and scans on to fill its size with good jobs.
      expect((await queue.claimBatch("w", 3, 30_000)).map((j) => j.id)).toEqual(["g2", "g3", "g4"]);
      expect(await queue.claimBatch("w", 3, 30_000)).toEqual([]);
      const info = await queue.view().job("victim");
      expect(info).toMatchObject({ state: "dead", headers: { "x-job": "victim" }, payloadSize: "payload of victim".length, enqueuedAt: T0 });
      expect(await queue.view().stats("w")).toEqual(stats({ claimed: 4, dead: 1 }));
      // Redriven, it runs with the payload kept.
      expect(await queue.requeueDead("victim")).toBe(true);
      const again = await queue.claim("w", 30_000);
      expect(again?.id).toBe("victim");
      expect(dec(again!.payload)).toBe("payload of victim");
    } finally {
      await queue.close();
    }
  });

  it("a worker runs through it, processing every good job", async () => {
    const store = await makeStore();
    const clock = new MockClock(T0);
    let queue = await open(store, clock, []);
    await fill(queue);
    await queue.close();
    await damageRecord(store, "victim", DAMAGES[0]!);
    queue = await open(store, clock, []);
    const stop = new AbortController();
    const processed: string[] = [];
    const errors: unknown[] = [];
    try {
      const worker = runWorker(
        queue,
        "w",
        { process: async (job) => void processed.push(job.id) },
        { signal: stop.signal, onError: (e) => void errors.push(e) },
      );
      await until("every good job done", async () => (await queue.view().stats("w")).done === 4);
      stop.abort();
      await worker;
      expect(processed).toEqual(["g1", "g2", "g3", "g4"]);
      expect(errors).toEqual([]);
      expect(await queue.view().stats("w")).toEqual(stats({ done: 4, dead: 1 }));
    } finally {
      stop.abort();
      await queue.close();
    }
  });

  it.each(DAMAGES)("with $what: its view names the job; a cancel removes it, and the good jobs stay claimable", async (damage) => {
    const store = await makeStore();
    const clock = new MockClock(T0);
    let queue = await open(store, clock, []);
    await fill(queue);
    await queue.close();
    await damageRecord(store, "victim", damage);
    queue = await open(store, clock, []);
    try {
      const err = await queue
        .view()
        .job("victim")
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      // The queue check is the claim's: read alone, a record naming another queue is still the job's own.
      if (damage.what !== "a queue naming another queue") {
        expect(err).toBeInstanceOf(TaqubaError);
        expect(err).toMatchObject({ code: "JOB_RECORD_DAMAGED", jobId: "victim" });
        expect((err as Error).message).toMatch(/the stored record of job victim is damaged/);
        expect((err as Error).message).not.toMatch(/j\/victim/);
        expect(await queue.cancelJob("victim")).toBe("removed");
        expect(await queue.view().job("victim")).toBeNull();
        expect(await queue.view().stats("w")).toEqual(stats({ pending: 4 }));
      }
      expect((await queue.claimBatch("w", 5, 30_000)).map((j) => j.id)).toEqual(["g1", "g2", "g3", "g4"]);
      expect(await queue.view().stats("other")).toEqual(stats({ pending: 1 }));
    } finally {
      await queue.close();
    }
    const engine = await engineOf(store);
    try {
      if (damage.what !== "a queue naming another queue") expect(engine.get(jobKey("victim"))).toBeUndefined();
      // The copied record's own job is untouched.
      expect(engine.get(jobKey("o1"))).toBeDefined();
    } finally {
      await engine.close();
    }
  });
});

describe.each(STORES)("a claimed job whose record is damaged before a restart, over a %s", (_store, makeStore) => {
  it.each(DAMAGES)("with $what is set aside as dead by the open's recovery, which no longer fails", async (damage) => {
    const store = await makeStore();
    const clock = new MockClock(T0);
    const dead: DeadLetteredEvent[] = [];
    let queue = await open(store, clock, dead);
    await fill(queue);
    // g1 done, g2 and the victim claimed when the process stops.
    const [g1, g2, victim] = await queue.claimBatch("w", 3, 30_000);
    expect([g1?.id, g2?.id, victim?.id]).toEqual(["g1", "g2", "victim"]);
    await queue.ack(g1!);
    await queue.close();

    await damageRecord(store, "victim", damage);
    queue = await open(store, clock, dead);
    try {
      expect(queue.recovery.deadLettered).toEqual(["victim"]);
      expect(queue.recovery.requeued).toEqual(["g2"]);
      const info = await queue.view().job("victim");
      expect(info).toMatchObject({ id: "victim", queueName: "w", state: "dead" });
      expect(info?.lastError).toMatch(/^record_corrupted: /);
      expect(info?.lastError).toMatch(damage.says);
      expect(await queue.view().stats("w")).toEqual(stats({ pending: 3, done: 1, dead: 1 }));
      const rest: string[] = [];
      for (let job = await queue.claim("w", 30_000); job !== null; job = await queue.claim("w", 30_000)) {
        await queue.ack(job);
        rest.push(job.id);
      }
      expect(rest).toEqual(["g2", "g3", "g4"]);
      expect(await queue.view().stats("w")).toEqual(stats({ done: 4, dead: 1 }));
      expect(await queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      await until("the set-aside announced", async () => dead.some((e) => e.jobId === "victim" && e.reason === "record_corrupted"));
    } finally {
      await queue.close();
    }
    queue = await open(store, clock, dead);
    try {
      expect(await queue.view().stats("w")).toEqual(stats({ done: 4, dead: 1 }));
      expect(queue.recovery.deadLettered).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});
