/**
 * @module A cancel of a job whose record is damaged finds the index entry
 * naming it from the fields the record still holds (its state, queue and
 * what orders it there) with one lookup, scanning every index only when
 * those fields cannot be read or name no entry of the job: pending,
 * scheduled, claimed, done and dead jobs, each removed with its queue's
 * stats equal to a recount of the store.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { removeDamaged } from "../../runtime/queue/damaged-record.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { Txn, type ReadSource } from "../../runtime/queue/txn.js";
import { counted, recount } from "./stats-recount.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const T0 = 1_764_000_000_000;
const enc = (s: string) => new TextEncoder().encode(s);

const rewritten = (own: Uint8Array, change: (r: Record<string, unknown>) => void) => {
  const r = general.unpack(own) as Record<string, unknown>;
  change(r);
  return new Uint8Array(general.pack(r));
};

const STATES = ["pending", "scheduled", "claimed", "done", "dead"] as const;
type State = (typeof STATES)[number];

/**
 * A damage, the states it applies to, and whether the record still says where a job in `state` is filed.
 * Another job's record copied over it is that of job "after" (pending) for a waiting job, of job
 * "before" (done at the same instant) for the others: its order names the victim's entry only as done.
 */
const DAMAGES: { what: string; bytes: (own: Uint8Array, other: Uint8Array) => Uint8Array; states: readonly State[]; names: (s: State) => boolean }[] = [
  { what: "an attempt count as text", bytes: (own) => rewritten(own, (r) => (r.attempts = "0")), states: STATES, names: () => true },
  // The last field of a scheduled record is its run time, which orders it.
  { what: "bytes cut in its last field", bytes: (own) => own.subarray(0, own.length - 1), states: STATES, names: (s) => s !== "scheduled" },
  { what: "a state no job is in", bytes: (own) => rewritten(own, (r) => (r.state = "lost")), states: STATES, names: () => false },
  // A done or dead record naming another queue reads as that queue's job: not damaged to a cancel.
  {
    what: "a queue naming another queue",
    bytes: (own) => rewritten(own, (r) => (r.queue = "other")),
    states: ["pending", "scheduled", "claimed"],
    names: () => false,
  },
  { what: "bytes cut to the map's head", bytes: (own) => own.subarray(0, 2), states: STATES, names: () => false },
  { what: "another job's record copied over it", bytes: (_own, other) => other.slice(), states: STATES, names: (s) => s === "done" },
];

const CASES = DAMAGES.flatMap((d) => d.states.map((state) => ({ ...d, state, found: d.names(state) ? "with one lookup" : "by a scan" })));

async function withJobIn(state: (typeof STATES)[number]) {
  const queue = await Queue.open(new MemoryStore(), "q", {
    clock: new MockClock(T0),
    flushIntervalMs: 0,
    logger: { debug: () => undefined, info: () => undefined, error: () => undefined, warn: () => undefined },
    queueConfigs: { w: { doneRetentionMs: 60_000, maxAttempts: 1 } },
  });
  await queue.enqueue("h", enc("h"));
  const handle = (await queue.claim("h"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  await queue.enqueue("w", enc("before"), { jobId: "before" });
  await queue.enqueue("w", enc("victim"), { jobId: "victim", ...(state === "scheduled" ? { runAt: T0 + 60_000 } : {}) });
  await queue.enqueue("w", enc("after"), { jobId: "after" });
  if (state === "claimed" || state === "done" || state === "dead") {
    const jobs = await queue.claimBatch("w", 3);
    for (const j of jobs) {
      if (j.id !== "victim") await queue.ack(j);
      else if (state === "done") await queue.ack(j);
      else if (state === "dead") await queue.deadLetter(j, "boom");
    }
  }
  return { queue, core };
}

describe("a cancel of a job whose record is damaged", () => {
  it.each(CASES)("with $what, of a $state job, finds its entry $found and removes it", async ({ bytes, names, state }) => {
    const { queue, core } = await withJobIn(state);
    try {
      const own = core.engine.get(jobKey("victim"))!;
      const other = core.engine.get(jobKey(state === "pending" || state === "scheduled" ? "after" : "before"))!;
      await core.engine.commit(new WriteBatch().put(jobKey("victim"), bytes(own, other)));
      let scans = 0;
      const src: ReadSource = {
        get: (k) => core.engine.get(k),
        scan: (o) => {
          scans++;
          return core.engine.scan(o);
        },
      };
      const gone = removeDamaged(new Txn(core.engine), src, "victim");
      expect(gone.entries.map((e) => [e.queue, e.state])).toEqual([["w", state]]);
      expect(scans > 0).toBe(!names(state));
      expect(await queue.cancelJob("victim")).toBe("removed");
      expect(await queue.view().job("victim")).toBeNull();
      expect(counted(await queue.view().stats("w"))).toEqual(recount(core.engine, "w"));
    } finally {
      await queue.close();
    }
  });
});
