/**
 * @module `Queue.ackClaimingNext`: an ack whose enqueue is written already
 * claimed by the caller in the same commit, when the queue allows it; the
 * claimed job then behaves like any claim (settles, expires, is recovered).
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, Queue, SettlementEffects, ValidationError, type ClaimNext } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { MemoryStore } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { dec, enc, openQueue, quiesce, settle } from "./helpers.js";

/**
 * A `ClaimNext` for the effects' enqueue at `index` that counts its reservations and records how
 * many jobs each asked it to leave room for; `answer` says yes or no, or decides from that number.
 */
function claimNext(index = 0, answer: boolean | ((waiting: number) => boolean) = true): ClaimNext & { reserved: number; asked: number[] } {
  const c = {
    index,
    reserved: 0,
    asked: [] as number[],
    reserve: (waiting: number) => {
      c.reserved++;
      c.asked.push(waiting);
      return typeof answer === "boolean" ? answer : answer(waiting);
    },
  };
  return c;
}

/** A caller with room for `slots` jobs: it takes the next one only with room left for those waiting before it. */
const roomFor = (slots: number) => (waiting: number) => waiting + 1 <= slots;

async function claimedOne(queue: Queue, name = "steps") {
  await queue.enqueue(name, enc("first"));
  const job = await queue.claim(name);
  if (job === null) throw new Error("nothing to claim");
  return job;
}

describe("ackClaimingNext", () => {
  it("acks and hands the next job back claimed, in one commit; it settles like any claim", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    await quiesce(queue);
    const before = queue.engineStats.walBatches;
    const c = claimNext();
    const res = await queue.ackClaimingNext(job, new SettlementEffects().kvPut("k", enc("v")).enqueue("steps", enc("second"), { dedupKey: "d" }), c);
    await quiesce(queue);
    expect(queue.engineStats.walBatches - before).toBe(1);
    expect(c.reserved).toBe(1);
    const next = res.next!;
    expect(res.enqueued).toEqual([{ jobId: next.id, newlyEnqueued: true }]);
    expect({ queue: next.queueName, payload: dec(next.payload), attempt: next.attempt }).toEqual({ queue: "steps", payload: "second", attempt: 1 });
    // A new job: nobody asked to cancel it.
    expect(next.cancelSignal.aborted).toBe(false);
    expect(await queue.view().job(job.id)).toBeNull();
    expect(await queue.view().job(next.id)).toMatchObject({ state: "claimed", attempt: 1 });
    expect(await queue.kvGet("k")).toEqual(enc("v"));
    // A claim releases its dedup key: the same key enqueues anew.
    expect((await queue.enqueue("other", enc("x"), { dedupKey: "d" })).newlyEnqueued).toBe(true);
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 1 });
    await queue.ack(next);
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 0, done: 2 });
    await queue.close();
  });

  it("leaves the job pending when the caller cannot take it, when work waits, when it is due later, or under admission limits", async () => {
    const { queue, clock } = await openQueue({ queueConfigs: { limited: { concurrency: { limit: 5 } } } });
    // The caller declines.
    let c = claimNext(0, false);
    let res = await queue.ackClaimingNext(await claimedOne(queue), new SettlementEffects().enqueue("steps", enc("a")), c);
    expect([res.next, c.reserved]).toEqual([undefined, 1]);
    expect(await queue.view().job(res.enqueued[0]!.jobId)).toMatchObject({ state: "pending", attempt: 0 });
    // A job already pending on that queue goes first (the one just left there), when the caller has no room for both.
    const waiting = await queue.claimBatch("steps", 1);
    expect(waiting).toHaveLength(1);
    await queue.enqueue("steps", enc("waiting"));
    c = claimNext(0, roomFor(1));
    res = await queue.ackClaimingNext(waiting[0]!, new SettlementEffects().enqueue("steps", enc("b")), c);
    expect([res.next, c.asked]).toEqual([undefined, [1]]);
    // A better priority than the waiting job's still goes first: it would be claimed first anyway.
    const w = await queue.claim("steps");
    c = claimNext(0, roomFor(1));
    res = await queue.ackClaimingNext(w!, new SettlementEffects().enqueue("steps", enc("urgent"), { priority: 0 }), c);
    expect(res.next?.payload).toEqual(enc("urgent"));
    expect(c.asked).toEqual([1, 0]);
    await queue.ack(res.next!);
    // Due later: scheduled, not claimed.
    c = claimNext();
    const job = (await queue.claim("steps"))!;
    res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("later"), { runAt: clock.now() + 1000 }), c);
    expect([res.next, c.reserved]).toEqual([undefined, 0]);
    expect(await queue.view().job(res.enqueued[0]!.jobId)).toMatchObject({ state: "scheduled" });
    // A queue with a concurrency limit: admission decides at a claim.
    c = claimNext();
    res = await queue.ackClaimingNext(await claimedOne(queue, "work"), new SettlementEffects().enqueue("limited", enc("l")), c);
    expect([res.next, c.reserved]).toEqual([undefined, 0]);
    expect(await queue.view().job(res.enqueued[0]!.jobId)).toMatchObject({ state: "pending" });
    await queue.close();
  });

  it("takes the job with work waiting when the caller has room for that work too, which a claim then takes first", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    await queue.enqueue("steps", enc("waiting 1"));
    await queue.enqueue("steps", enc("waiting 2"));
    const c = claimNext(0, roomFor(3));
    const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("next")), c);
    expect(c.asked).toEqual([2]);
    expect(res.next?.payload).toEqual(enc("next"));
    // Not overtaken: they are still the first a claim takes.
    expect((await queue.claimBatch("steps", 5)).map((j) => dec(j.payload))).toEqual(["waiting 1", "waiting 2"]);
    await queue.close();
  });

  it("counts the jobs a claim took and has not handed out yet as waiting, until it hands them out", async () => {
    let holding = false;
    const store = new GatedStore(new MemoryStore(), (key) => holding && key.includes("/wal/"));
    const { queue } = await openQueue({ store });
    const first = await claimedOne(queue);
    const second = await claimedOne(queue);
    await quiesce(queue);
    // Two enqueues whose WAL put is held: a claim takes both jobs, then waits for that put.
    holding = true;
    void queue.enqueue("steps", enc("x"));
    void queue.enqueue("steps", enc("y"));
    await settle(5);
    const claiming = queue.claimBatch("steps", 5);
    await settle(5);
    let c = claimNext(0, roomFor(2));
    const acked = queue.ackClaimingNext(first, new SettlementEffects().enqueue("steps", enc("a")), c);
    await store.waitHeld(1);
    expect(c.asked).toEqual([2]);
    holding = false;
    for (const h of [...store.held]) store.release(h.key);
    expect((await claiming).map((j) => dec(j.payload))).toEqual(["x", "y"]);
    expect((await acked).next).toBeUndefined();
    // Handed out: no longer counted; the job left pending above is, and there is room for it.
    c = claimNext(0, roomFor(2));
    const res = await queue.ackClaimingNext(second, new SettlementEffects().enqueue("steps", enc("b")), c);
    expect(c.asked).toEqual([1]);
    expect(res.next?.payload).toEqual(enc("b"));
    expect((await queue.claimBatch("steps", 5)).map((j) => dec(j.payload))).toEqual(["a"]);
    await queue.close();
  });

  it("a dedup hit hands nothing out", async () => {
    const { queue, clock } = await openQueue();
    const held = await queue.enqueue("steps", enc("held"), { dedupKey: "d", runAt: clock.now() + 60_000 });
    const c = claimNext();
    const res = await queue.ackClaimingNext(await claimedOne(queue, "work"), new SettlementEffects().enqueue("steps", enc("dup"), { dedupKey: "d" }), c);
    expect(res.enqueued).toEqual([{ jobId: held.jobId, newlyEnqueued: false }]);
    expect(res.next).toBeUndefined();
    await queue.close();
  });

  it("refuses an index that names no enqueue, changing nothing", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    await quiesce(queue);
    const before = queue.engineStats.walBatches;
    for (const index of [1, -1, 0.5]) {
      await expect(queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("x")), claimNext(index))).rejects.toThrow(ValidationError);
    }
    await expect(queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("x")), { ...claimNext(), leaseMs: 0 })).rejects.toThrow(
      ValidationError,
    );
    await quiesce(queue);
    expect(queue.engineStats.walBatches).toBe(before);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    await queue.ack(job);
    await queue.close();
  });

  it("refuses a reserve that answers anything but true or false, settling nothing; the claim stays held", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    // With work pending that a claim takes after the next job, so the queue may ask twice: both answers are checked.
    await queue.enqueue("steps", enc("pending"), { priority: 5000 });
    await quiesce(queue);
    const before = queue.engineStats.walBatches;
    const answers: unknown[] = [1, 0, "yes", "", null, undefined, {}, Promise.resolve(true), Number.NaN];
    for (const answer of answers) {
      const odd = { index: 0, reserve: () => answer as boolean };
      const refused = await queue
        .ackClaimingNext(job, new SettlementEffects().kvPut("k", enc("v")).enqueue("steps", enc("next")), odd)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as Error).message).toMatch(/ClaimNext\.reserve must answer true .* or false .*, got .*the job was not acked and its claim is still held/);
    }
    // An odd answer to the second question only (the first, with room asked for the pending job too, is "no").
    const second = { index: 0, reserve: (waiting: number) => (waiting > 0 ? false : ("later" as unknown as boolean)) };
    await expect(queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("next")), second)).rejects.toThrow(ValidationError);
    await quiesce(queue);
    expect(queue.engineStats.walBatches).toBe(before);
    expect(await queue.kvGet("k")).toBeNull();
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 1, claimed: 1 });
    // The claim still settles, with a proper answer.
    const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("next")), claimNext(0, true));
    expect(res.next).toBeDefined();
    await queue.close();
  });

  it("a reserve that throws rejects the ack with what it threw, settling nothing; the claim stays held", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    await quiesce(queue);
    const before = queue.engineStats.walBatches;
    const thrown = new Error("the pool is shutting down");
    const throwing = {
      index: 0,
      reserve: (): boolean => {
        throw thrown;
      },
    };
    const refused = await queue
      .ackClaimingNext(job, new SettlementEffects().kvPut("k", enc("v")).enqueue("steps", enc("next")), throwing)
      .catch((e: unknown) => e);
    expect(refused).toBe(thrown);
    await quiesce(queue);
    expect(queue.engineStats.walBatches).toBe(before);
    expect(await queue.kvGet("k")).toBeNull();
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 1 });
    // The claim still settles.
    const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("next")), claimNext(0, true));
    expect(res.next).toBeDefined();
    await queue.close();
  });

  it("the claimed job's lease expires like any claim's: it is requeued and its holder's settlement is refused", async () => {
    const { queue, clock } = await openQueue();
    const res = await queue.ackClaimingNext(await claimedOne(queue), new SettlementEffects().enqueue("steps", enc("n")), { ...claimNext(), leaseMs: 1000 });
    const next = res.next!;
    expect(next.lease.expiresAt).toBe(clock.now() + 1000);
    clock.advance(1001);
    await queue.runMaintenance();
    expect(await queue.view().job(next.id)).toMatchObject({ state: "pending", attempt: 1 });
    await expect(queue.ack(next)).rejects.toThrow(ClaimLostError);
    const again = (await queue.claim("steps"))!;
    expect({ id: again.id, attempt: again.attempt }).toEqual({ id: next.id, attempt: 2 });
    await queue.ack(again);
    await queue.close();
  });

  it("an ack of a chained claim leaves no attempt history; nor does one of its job claimed again after its lease expired", async () => {
    const { queue, clock } = await openQueue();
    // Acked while chained: no history was ever written.
    const first = (await queue.ackClaimingNext(await claimedOne(queue), new SettlementEffects().enqueue("steps", enc("a")), claimNext())).next!;
    const res = await queue.ackClaimingNext(first, new SettlementEffects().enqueue("steps", enc("b")), { ...claimNext(), leaseMs: 1000 });
    expect(await queue.view().attemptHistory(first.id)).toEqual([]);
    // The chained claim's lease expires: the reaper records the attempt; the next claim is an ordinary one.
    const next = res.next!;
    clock.advance(1001);
    await queue.runMaintenance();
    expect((await queue.view().attemptHistory(next.id)).map((a) => a.outcome)).toEqual(["lease_expired"]);
    const again = (await queue.claim("steps"))!;
    expect(again.id).toBe(next.id);
    const third = (await queue.ackClaimingNext(again, new SettlementEffects().enqueue("steps", enc("c")), claimNext())).next!;
    expect(await queue.view().job(next.id)).toBeNull();
    expect(await queue.view().attemptHistory(next.id)).toEqual([]);
    await queue.ack(third);
    expect(await queue.view().attemptHistory(third.id)).toEqual([]);
    await queue.close();
  });

  it("a chained step that fails, is retried and acked keeps an exact history and attempt count; its old claim cannot settle", async () => {
    for (const kept of [true, false]) {
      const { queue, clock } = await openQueue(kept ? { queueConfigs: { steps: { doneRetentionMs: 60_000 } } } : {});
      const step = (await queue.ackClaimingNext(await claimedOne(queue), new SettlementEffects().enqueue("steps", enc("a")), claimNext())).next!;
      expect(step.attempt).toBe(1);
      await queue.nack(step, "boom", undefined, { retryAfterMs: 10 });
      expect((await queue.view().attemptHistory(step.id)).map((a) => [a.outcome, a.attempt])).toEqual([["retried", 1]]);
      await expect(queue.ack(step)).rejects.toBeInstanceOf(ClaimLostError);
      clock.advance(60_000);
      await queue.runMaintenance();
      const again = (await queue.claim("steps"))!;
      expect({ id: again.id, attempt: again.attempt }).toEqual({ id: step.id, attempt: 2 });
      // Released without a durable trace, then claimed again: still the same history.
      queue.releaseClaim(again);
      const third = (await queue.claim("steps"))!;
      expect({ id: third.id, attempt: third.attempt }).toEqual({ id: step.id, attempt: 2 });
      const res = await queue.ackClaimingNext(third, new SettlementEffects().enqueue("steps", enc("b")), claimNext());
      const history = (await queue.view().attemptHistory(step.id)).map((a) => [a.outcome, a.attempt]);
      // Kept: the retry and the completion; not kept: the history goes with the record.
      expect(history).toEqual(
        kept
          ? [
              ["retried", 1],
              ["completed", 2],
            ]
          : [],
      );
      expect(await queue.view().job(step.id)).toEqual(kept ? expect.objectContaining({ state: "done", attempt: 2 }) : null);
      await queue.ack(res.next!);
      expect((await queue.view().attemptHistory(res.next!.id)).map((a) => a.outcome)).toEqual(kept ? ["completed"] : []);
      await queue.close();
    }
  });

  it("a claimed job requeued by its lease before the ack is durable is handed to no claim until it is", async () => {
    let holding = false;
    const store = new GatedStore(new MemoryStore(), (key) => holding && key.includes("/wal/"));
    const { queue, clock } = await openQueue({ store });
    const job = await claimedOne(queue);
    await quiesce(queue);
    holding = true;
    const acked = queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("n")), { ...claimNext(), leaseMs: 1 });
    await store.waitHeld(1);
    const [claimed] = (await queue.view().listJobs("steps", "claimed")).items;
    clock.advance(2);
    await queue.runMaintenance();
    expect(await queue.view().job(claimed!.id)).toMatchObject({ state: "pending" });
    let got: unknown;
    const claiming = queue.claim("steps").then((j) => (got = j));
    await settle(20);
    expect(got).toBeUndefined();
    holding = false;
    for (const h of [...store.held]) store.release(h.key);
    expect((await claiming)?.id).toBe(claimed!.id);
    // The ack's own handout found its lease gone: nothing handed out twice.
    expect((await acked).next).toBeUndefined();
    await queue.close();
  });

  it("a crash after the commit leaves the job claimed; the next open requeues it", async () => {
    const { queue, store, clock } = await openQueue();
    const res = await queue.ackClaimingNext(await claimedOne(queue), new SettlementEffects().enqueue("steps", enc("n")), claimNext());
    // No close: the second open fences the first, as after a crash.
    const { queue: reopened } = await openQueue({ store, clock });
    expect(reopened.recovery.requeued).toEqual([res.next!.id]);
    const again = (await reopened.claim("steps"))!;
    expect({ id: again.id, payload: dec(again.payload) }).toEqual({ id: res.next!.id, payload: "n" });
    await reopened.ack(again);
    await reopened.close();
    await queue.close();
  });

  it("releaseClaim gives the job back pending with its attempt uncounted", async () => {
    const { queue } = await openQueue();
    const res = await queue.ackClaimingNext(await claimedOne(queue), new SettlementEffects().enqueue("steps", enc("n")), claimNext());
    queue.releaseClaim(res.next!);
    expect(await queue.view().job(res.next!.id)).toMatchObject({ state: "pending", attempt: 0 });
    await expect(queue.ack(res.next!)).rejects.toThrow(ClaimLostError);
    await queue.close();
  });

  it("the next job shares its claimed record's headers, frozen: neither the enqueue's caller nor a worker changes the job or its record", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    const headers: Record<string, string> = { tenant: "t1" };
    const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("second"), { headers }), claimNext());
    const next = res.next!;
    // One object, not a copy per claimed job: the record the settlement keeps for the job and the job itself.
    expect(next.headers).toBe(ticketOf(next)!.claimedRecord!.headers);
    expect(Object.isFrozen(next.headers)).toBe(true);
    // The enqueue's caller still holds its object: the insert copied it, so writing it changes nothing of the job.
    headers["tenant"] = "changed";
    expect(next.headers).toEqual({ tenant: "t1" });
    expect(() => {
      (next.headers as Record<string, string>)["planted"] = "x";
    }).toThrow(TypeError);
    await queue.ack(next);
    await queue.enqueue("steps", enc("third"), { headers: { tenant: "t1" } });
    expect((await queue.claim("steps"))!.headers).toEqual({ tenant: "t1" });
  });

  it("a settlement finds the claim in the job itself, not in a copy or a job of another queue instance", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    const next = (await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("second")), claimNext())).next!;
    // The claim is in the job's hidden slot: a copy carries the signal but not the claim.
    await expect(queue.ack({ ...next })).rejects.toBeInstanceOf(ValidationError);
    expect(next.cancelSignal.aborted).toBe(false);
    await queue.ack(next);
    expect(await queue.view().job(next.id)).toBeNull();
  });
});
