/**
 * @module Caller ids of enqueues still in flight (their large payload being
 * written, their commit not built yet) against ids drawn for other
 * enqueues meanwhile: a drawn id passes over every caller id in flight, not
 * only those of its own commit, so a caller's named job always gets its
 * name; two callers naming one id still see exactly one refused.
 *
 * The queue's clock stands still, so ids drawn count up by one from the id
 * `nextJobId` handed out (see next-ulid.ts): each payload object written
 * takes one, and a test names the id the next draw would take.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, type ObjectStore, type PutOptions, type Queue, SettlementEffects } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";
import { dec, enc, openQueue } from "./helpers.js";

/** Above the offload threshold the tests open their queues with: written to its own object first. */
const BIG = 64;
const big = (text: string) => enc(text.padEnd(BIG, "."));

/** Holds every payload object's put until released; the first `failures` of them then fail, as a store refusing them would. */
class HeldPayloads extends GatedStore {
  constructor(
    inner: ObjectStore,
    public failures: number,
  ) {
    super(inner, (key) => key.includes("/payloads/"));
  }

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const stored = await super.put(key, body, opts);
    if (key.includes("/payloads/") && this.failures-- > 0) throw new Error("the store refused the payload");
    return stored;
  }
}

/** A queue whose payload objects' puts are held until released, over `inner` (reopened over the same store after a restart). */
async function gatedQueue(inner: ObjectStore = new MemoryStore(), failures = 0) {
  const store = new HeldPayloads(inner, failures);
  const { queue, clock } = await openQueue({ store, payloadOffloadBytes: 16 });
  return { queue, store, inner, clock };
}

/** The id of the payload object a held put writes. */
const refOf = (key: string) => key.slice(key.lastIndexOf("/") + 1);

/** What `p` settles with: its value, or the error it rejected with. */
function outcomeOf<T>(p: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

/** Claims and acks every ready job of queue "q": each one's payload (its first character) by job id. */
async function payloadsById(queue: Queue): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (let j = await queue.claim("q"); j; j = await queue.claim("q")) {
    out[j.id] = dec(j.payload).slice(0, 1);
    await queue.ack(j);
  }
  return out;
}

describe("caller ids of enqueues in flight", () => {
  it("a batch's generated ids pass over the id of a single enqueue still writing its payload, which then gets its id", async () => {
    const { queue, store } = await gatedQueue();
    const base = queue.nextJobId();
    // The caller's payload object takes the id after base; the next draw would be this one.
    const named = ulidAfter(base, 2);
    const caller = outcomeOf(queue.enqueue("q", big("A"), { jobId: named }));
    await store.waitHeld(1);
    expect(refOf(store.held[0]!.key)).toBe(nextUlid(base));
    const generated = await queue.enqueueBatch([
      { queueName: "q", payload: enc("B") },
      { queueName: "q", payload: enc("C") },
    ]);
    expect(generated.map((o) => o.jobId)).not.toContain(named);
    store.release(store.held[0]!.key);
    expect(await caller).toEqual({ value: { jobId: named, newlyEnqueued: true } });
    expect(await payloadsById(queue)).toEqual({
      [named]: "A",
      [generated[0]!.jobId]: "B",
      [generated[1]!.jobId]: "C",
    });
    await queue.close();
  });

  it("a single enqueue's generated id passes over the id a batch still writing its payloads names", async () => {
    const { queue, store } = await gatedQueue();
    const base = queue.nextJobId();
    // The batch's two payload objects take the two ids after base.
    const named = ulidAfter(base, 3);
    const caller = outcomeOf(
      queue.enqueueBatch([
        { queueName: "q", payload: big("A") },
        { queueName: "q", payload: big("B"), opts: { jobId: named } },
      ]),
    );
    await store.waitHeld(2);
    const generated = await queue.enqueue("q", enc("C"));
    expect(generated.jobId).toBe(nextUlid(named));
    for (const h of [...store.held]) store.release(h.key);
    const settled = await caller;
    expect("value" in settled && settled.value[1]).toEqual({ jobId: named, newlyEnqueued: true });
    expect((await payloadsById(queue))[named]).toBe("B");
    await queue.close();
  });

  it("enqueueWithEffects' generated ids pass over the id another enqueueWithEffects names in its effects while writing their payload", async () => {
    const { queue, store } = await gatedQueue();
    const base = queue.nextJobId();
    const named = ulidAfter(base, 2);
    const effects = new SettlementEffects().enqueue("q", big("A"), { jobId: named });
    const caller = outcomeOf(queue.enqueueWithEffects("q", enc("own"), {}, effects));
    await store.waitHeld(1);
    const other = await queue.enqueueWithEffects("q", enc("B"), {}, new SettlementEffects().enqueue("q", enc("C")));
    expect([other.outcome.jobId, ...other.enqueued.map((o) => o.jobId)]).not.toContain(named);
    store.release(store.held[0]!.key);
    const settled = await caller;
    expect("value" in settled && settled.value.enqueued).toEqual([{ jobId: named, newlyEnqueued: true }]);
    expect((await payloadsById(queue))[named]).toBe("A");
    await queue.close();
  });

  it("a settlement's generated enqueue and nextJobId pass over a caller id in flight", async () => {
    const { queue, store } = await gatedQueue();
    await queue.enqueue("work", enc("job"));
    const job = (await queue.claim("work"))!;
    const base = queue.nextJobId();
    const named = ulidAfter(base, 2);
    const caller = outcomeOf(queue.enqueue("q", big("A"), { jobId: named }));
    await store.waitHeld(1);
    const [settled] = await queue.ack(job, new SettlementEffects().enqueue("q", enc("B")));
    expect(settled!.jobId).toBe(nextUlid(named));
    // The next id handed out would be the one after: drawn past every caller id in flight too.
    const caller2 = outcomeOf(queue.enqueue("q", big("C"), { jobId: ulidAfter(named, 3) }));
    await store.waitHeld(2);
    expect(queue.nextJobId()).toBe(ulidAfter(named, 4));
    for (const h of [...store.held]) store.release(h.key);
    expect(await caller).toEqual({ value: { jobId: named, newlyEnqueued: true } });
    expect(await caller2).toEqual({ value: { jobId: ulidAfter(named, 3), newlyEnqueued: true } });
    await queue.close();
  });

  it("an enqueue started while a generated one writes its payload, whose commit then draws the caller's id, still gets its id", async () => {
    const { queue, store } = await gatedQueue();
    const base = queue.nextJobId();
    // The generated enqueue's payload object takes base+1, the caller's base+2: the generated commit then draws base+3.
    const named = ulidAfter(base, 3);
    const generated = outcomeOf(queue.enqueue("q", big("B")));
    await store.waitHeld(1);
    const caller = outcomeOf(queue.enqueue("q", big("A"), { jobId: named }));
    await store.waitHeld(2);
    store.release(store.held[0]!.key);
    const g = await generated;
    expect("value" in g && g.value.jobId).toBe(nextUlid(named));
    store.release(store.held[0]!.key);
    expect(await caller).toEqual({ value: { jobId: named, newlyEnqueued: true } });
    await queue.close();
  });

  it("two callers naming one id in flight: generated ids pass over it, and exactly one caller is refused, whichever lands first", async () => {
    for (const first of [0, 1]) {
      const { queue, store } = await gatedQueue();
      const base = queue.nextJobId();
      const named = ulidAfter(base, 3);
      const callers = [outcomeOf(queue.enqueue("q", big("A"), { jobId: named }))];
      await store.waitHeld(1);
      callers.push(outcomeOf(queue.enqueue("q", big("B"), { jobId: named })));
      await store.waitHeld(2);
      const holds = store.held.map((h) => h.key);
      const generated = await queue.enqueue("q", enc("C"));
      expect(generated.jobId).toBe(nextUlid(named));
      store.release(holds[first]!);
      await expect(callers[first]!).resolves.toEqual({ value: { jobId: named, newlyEnqueued: true } });
      store.release(holds[1 - first]!);
      const refused = await callers[1 - first]!;
      expect("error" in refused && refused.error).toBeInstanceOf(DuplicateJobIdError);
      expect(await payloadsById(queue)).toEqual({ [named]: first === 0 ? "A" : "B", [generated.jobId]: "C" });
      await queue.close();
    }
  });

  it("after a restart, the reopened queue's draws pass over a caller id in flight, and the jobs from before keep their ids", async () => {
    const inner = new MemoryStore();
    const before = await gatedQueue(inner);
    const base = before.queue.nextJobId();
    const named = ulidAfter(base, 2);
    const caller = outcomeOf(before.queue.enqueue("q", big("A"), { jobId: named }));
    await before.store.waitHeld(1);
    const generated = await before.queue.enqueue("q", enc("B"));
    expect(generated.jobId).toBe(nextUlid(named));
    before.store.release(before.store.held[0]!.key);
    expect(await caller).toEqual({ value: { jobId: named, newlyEnqueued: true } });
    await before.queue.close();

    const after = await gatedQueue(inner);
    expect(await payloadsById(after.queue)).toEqual({ [named]: "A", [generated.jobId]: "B" });
    const base2 = after.queue.nextJobId();
    const named2 = ulidAfter(base2, 2);
    const caller2 = outcomeOf(after.queue.enqueue("q", big("C"), { jobId: named2 }));
    await after.store.waitHeld(1);
    const generated2 = await after.queue.enqueueBatch([{ queueName: "q", payload: enc("D") }]);
    expect(generated2[0]!.jobId).toBe(nextUlid(named2));
    after.store.release(after.store.held[0]!.key);
    expect(await caller2).toEqual({ value: { jobId: named2, newlyEnqueued: true } });
    expect(await payloadsById(after.queue)).toEqual({ [named2]: "C", [generated2[0]!.jobId]: "D" });
    await after.queue.close();
  });

  it("a caller id whose payload write failed is no longer passed over", async () => {
    // The held put fails once released: the enqueue is refused, its id never used.
    const { queue, store } = await gatedQueue(new MemoryStore(), 1);
    const base = queue.nextJobId();
    const named = ulidAfter(base, 2);
    const caller = outcomeOf(queue.enqueue("q", big("A"), { jobId: named }));
    await store.waitHeld(1);
    store.release(store.held[0]!.key);
    const failed = await caller;
    expect("error" in failed && String(failed.error)).toContain("refused the payload");
    // Drawn ids pass over no id of a failed enqueue: the next draw is the one after the payload object's.
    expect(queue.nextJobId()).toBe(named);
    await queue.close();
  });

  it("of two callers naming one id, one whose payload write failed leaves the id held off for the other", async () => {
    const { queue, store } = await gatedQueue(new MemoryStore(), 1);
    const base = queue.nextJobId();
    const named = ulidAfter(base, 3);
    const failing = outcomeOf(queue.enqueue("q", big("A"), { jobId: named }));
    await store.waitHeld(1);
    const caller = outcomeOf(queue.enqueue("q", big("B"), { jobId: named }));
    await store.waitHeld(2);
    store.release(store.held[0]!.key);
    const failed = await failing;
    expect("error" in failed && String(failed.error)).toContain("refused the payload");
    const generated = await queue.enqueue("q", enc("C"));
    expect(generated.jobId).toBe(nextUlid(named));
    store.release(store.held[0]!.key);
    expect(await caller).toEqual({ value: { jobId: named, newlyEnqueued: true } });
    expect(await payloadsById(queue)).toEqual({ [named]: "B", [generated.jobId]: "C" });
    await queue.close();
  });
});
