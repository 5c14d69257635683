/**
 * @module Effects of ack, nack at the limit, deadLetter and cancel across a
 * crash: applied whole with their settlement or not at all.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, SettlementEffects } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { enc } from "./helpers.js";

/**
 * Each settlement kind with effects, then a "crash": a second writer opens
 * the same store without the first closing (the first is fenced). The new
 * process must see each settlement whole, state and effects together.
 */
describe("settlement effects survive a crash whole", () => {
  it("ack, nack at the limit, deadLetter and cancel", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const q1 = await Queue.open(store, "q", { clock, flushIntervalMs: 0, defaultQueueConfig: { maxAttempts: 1 } });
    const ids = {
      ack: (await q1.enqueue("q", enc("ack"))).jobId,
      nack: (await q1.enqueue("q", enc("nack"))).jobId,
      dead: (await q1.enqueue("q", enc("dead"))).jobId,
      cancel: (await q1.enqueue("other", enc("cancel"))).jobId,
    };
    const fx = (tag: string) => new SettlementEffects().kvPut(`fx/${tag}`, enc(tag)).enqueue("follow", enc(tag), { dedupKey: tag });
    const [a, n, d] = await q1.claimBatch("q", 3);
    await q1.ack(a!, fx("ack"));
    await q1.nack(n!, "boom", fx("nack"));
    await q1.deadLetter(d!, "bad", fx("dead"));
    expect(await q1.cancelJob(ids.cancel, fx("cancel"))).toBe("removed");
    // A claim after the last durable commit may or may not survive; either is consistent.
    await q1.enqueue("late", enc("x"));
    void q1.claim("late");

    const q2 = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    for (const tag of ["ack", "nack", "dead", "cancel"]) expect(await q2.kvGet(`fx/${tag}`)).not.toBeNull();
    expect(await q2.view().stats("follow")).toMatchObject({ pending: 4 });
    expect(await q2.view().job(ids.ack)).toBeNull();
    expect(await q2.view().job(ids.nack)).toMatchObject({ state: "dead", lastError: "boom" });
    expect(await q2.view().job(ids.dead)).toMatchObject({ state: "dead", lastError: "bad" });
    expect(await q2.view().job(ids.cancel)).toBeNull();
    expect(await q2.view().stats("q")).toMatchObject({ pending: 0, claimed: 0, done: 1, dead: 2 });
    const late = await q2.view().stats("late");
    expect(late.pending + late.claimed).toBe(0 + 1);
    expect(late.claimed).toBe(0); // recovery requeued it if the claim had become durable
    await q2.close();
    await q1.close().catch(() => undefined);
  });
});

/**
 * The same settlements, all in flight at once when the process dies: the
 * store accepts the first `budget` writes after they start and no more
 * (the process is gone). Whatever reached the store, each settlement is
 * seen whole (state and effects) or not at all, for every budget.
 */
describe("settlement effects in flight at a crash", () => {
  it("each settlement is applied whole or not at all, whatever write the crash lands on", async () => {
    let applied = 0;
    let notApplied = 0;
    for (let budget = 0; budget < 6; budget++) {
      const inner = new MemoryStore();
      const clock = new MockClock();
      let puts = 0;
      let crashed = false;
      const store = failWhen(inner, (call) => {
        if (call !== "put" || !crashed) return undefined;
        return puts++ < budget ? undefined : new Error("the process is gone");
      });
      const q1 = await Queue.open(store, "q", { clock, flushIntervalMs: 0, defaultQueueConfig: { maxAttempts: 1 } });
      const ids = {
        ack: (await q1.enqueue("q", enc("ack"))).jobId,
        nack: (await q1.enqueue("q", enc("nack"))).jobId,
        dead: (await q1.enqueue("q", enc("dead"))).jobId,
        cancel: (await q1.enqueue("other", enc("cancel"))).jobId,
      };
      const fx = (tag: string) => new SettlementEffects().kvPut(`fx/${tag}`, enc(tag)).enqueue("follow", enc(tag), { dedupKey: tag });
      const [a, n, d] = await q1.claimBatch("q", 3);
      crashed = true;
      // None awaited before the crash; a turn of the event loop between them puts
      // each in its own WAL object, written concurrently, so the crash can split them.
      const turn = () => new Promise<void>((r) => setImmediate(r));
      const pending: Promise<unknown>[] = [q1.ack(a!, fx("ack"))];
      await turn();
      pending.push(q1.nack(n!, "boom", fx("nack")));
      await turn();
      pending.push(q1.deadLetter(d!, "bad", fx("dead")));
      await turn();
      pending.push(q1.cancelJob(ids.cancel, fx("cancel")));
      const settling = Promise.allSettled(pending);
      await settling;

      const q2 = await Queue.open(inner, "q", { clock, flushIntervalMs: 0 });
      const view = q2.view();
      const whole = {
        ack: (await view.job(ids.ack)) === null,
        // Recovery dead-letters an unsettled claim with no attempts left too: the error tells them apart.
        nack: (await view.job(ids.nack))?.lastError === "boom",
        dead: (await view.job(ids.dead))?.lastError === "bad",
        cancel: (await view.job(ids.cancel)) === null,
      };
      for (const [tag, settled] of Object.entries(whole)) {
        const effect = await q2.kvGet(`fx/${tag}`);
        expect(effect !== null, `budget ${budget}: ${tag} settled=${settled} but its effect ${effect ? "is" : "is not"} there`).toBe(settled);
        if (settled) applied++;
        else notApplied++;
      }
      const settledCount = Object.values(whole).filter(Boolean).length;
      // A settlement that was acknowledged is never lost.
      const results = await settling;
      (["ack", "nack", "dead", "cancel"] as const).forEach((tag, i) => {
        if (results[i]!.status === "fulfilled") expect(whole[tag], `budget ${budget}: acknowledged ${tag} lost`).toBe(true);
      });
      expect((await view.stats("follow")).pending, `budget ${budget}: follow-up enqueues`).toBe(settledCount);
      // What was not applied is back to be worked on (recovery requeues claims), never lost.
      if (!whole.ack) expect(await view.job(ids.ack)).toMatchObject({ state: expect.stringMatching(/^(pending|dead)$/) });
      if (!whole.cancel) expect(await view.job(ids.cancel)).toMatchObject({ state: "pending" });
      await q2.close();
      await q1.close().catch(() => undefined);
    }
    // The budgets cover both outcomes: some crashes lose the settlements, some keep them.
    expect(applied).toBeGreaterThan(0);
    expect(notApplied).toBeGreaterThan(0);
  });
});
