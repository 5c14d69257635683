/**
 * @module Attack on next jobs inserted under an id the queue drew, without
 * a look-up: settlements staging drawn ids race, all at once and in a
 * random order, callers' enqueues naming those same ids and ids the next
 * draws would take, with payloads small and large (written as objects
 * first), and enqueues that draw ids of their own. Every id ends held by
 * exactly one job, the one whose call succeeded; every other call naming
 * it is refused with DuplicateJobIdError and changed nothing (a refused
 * settlement leaves its job claimed); ids drawn later pass over every id
 * a caller took; a reopen sees the same.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, Queue, SettlementEffects } from "taquba";
import { stageRebuiltEnqueue } from "../../runtime/queue/effects.js";
import { ulidAfter } from "../support/next-ulid.js";
import { testRandom } from "../support/seed.js";
import { dec, enc, openQueue } from "./helpers.js";

/** A settlement's effects enqueuing job `jobId` to queue "q" as drawn, as a workflow's next step does. */
function nextJobEffects(jobId: string, payload: Uint8Array): SettlementEffects {
  const effects = new SettlementEffects();
  stageRebuiltEnqueue(effects, "q", payload, { jobId, dedupKey: `next-${jobId}`, priority: 1000, maxAttempts: 3, headers: { step: "1" }, jobIdDrawn: true });
  return effects;
}

type Outcome = { kind: "settlement" | "caller" | "free"; id: string | undefined; payload: string; work?: string; result: unknown };

describe("drawn ids raced by callers' ids", () => {
  for (let n = 1; n <= 4; n++) {
    it(`every id is held by the one job whose call succeeded, the others refused and nothing changed (seeded, ${n})`, async () => {
      const rnd = testRandom(`drawn-id-race-${n}`);
      const store = new MemoryStore();
      const { queue, clock } = await openQueue({ store, payloadOffloadBytes: 64 });
      const payload = (what: string) => (rnd.int(3) === 0 ? what.padEnd(200, ".") : what);
      const outcomes: Outcome[] = [];
      for (let round = 0; round < 5; round++) {
        const W = 3 + rnd.int(5);
        for (let i = 0; i < W; i++) await queue.enqueue("work", enc(`w${round}.${i}`));
        const work = await queue.claimBatch("work", W);
        expect(work).toHaveLength(W);
        const drawn = work.map(() => queue.nextJobId());
        const ahead = [1, 2, 3].map((k) => ulidAfter(drawn.at(-1)!, k));
        const calls: (() => Outcome)[] = [];
        for (const [i, job] of work.entries()) {
          const p = payload(`settlement ${drawn[i]}`);
          calls.push(() => {
            const o: Outcome = { kind: "settlement", id: drawn[i], payload: p, work: job.id, result: undefined };
            o.result = queue.ack(job, nextJobEffects(drawn[i]!, enc(p)));
            return o;
          });
        }
        for (const id of [...drawn, ...ahead]) {
          if (rnd.int(2) === 0) continue;
          for (let c = 0; c < 1 + rnd.int(2); c++) {
            const p = payload(`caller ${id} ${c}`);
            calls.push(() => ({ kind: "caller", id, payload: p, result: queue.enqueue("q", enc(p), { jobId: id }) }));
          }
        }
        for (let f = 0; f < 3; f++) {
          const p = payload(`free ${round}.${f}`);
          calls.push(() => ({ kind: "free", id: undefined, payload: p, result: queue.enqueue("q", enc(p)) }));
        }
        // All at once, in a random order.
        for (let i = calls.length - 1; i > 0; i--) {
          const j = rnd.int(i + 1);
          [calls[i], calls[j]] = [calls[j]!, calls[i]!];
        }
        const started = calls.map((call) => call());
        const settled = started.map((o) =>
          (o.result as Promise<unknown>).then(
            (v) => ({ ok: v }),
            (e: unknown) => ({ err: e }),
          ),
        );
        for (const [i, o] of started.entries()) {
          o.result = await settled[i];
          if (o.kind === "free" && "ok" in (o.result as object)) o.id = ((o.result as { ok: { jobId: string } }).ok as { jobId: string }).jobId;
        }
        outcomes.push(...started);
        clock.advance(1);
      }
      await check(queue, outcomes, false);
      await queue.close();
      const again = await Queue.open(store, "q", { flushIntervalMs: 0, clock });
      await check(again, outcomes, true);
      await again.close();
    });
  }
});

/** Each id held by the job of the one call that succeeded naming it; every refusal a DuplicateJobIdError that changed nothing. */
async function check(queue: Queue, outcomes: Outcome[], reopened: boolean): Promise<void> {
  const winners = new Map<string, Outcome>();
  for (const o of outcomes) {
    const r = o.result as { ok?: unknown; err?: unknown };
    if ("err" in r) {
      expect(r.err, `${o.kind} ${o.id}: ${String(r.err)}`).toBeInstanceOf(DuplicateJobIdError);
      expect(o.kind).not.toBe("free");
      // A refused settlement changed nothing: its job is still claimed (requeued by the recovery of a reopen).
      if (o.kind === "settlement") expect(await queue.view().job(o.work!)).toMatchObject({ state: reopened ? "pending" : "claimed" });
      continue;
    }
    expect(winners.has(o.id!), `two calls succeeded naming ${o.id}`).toBe(false);
    winners.set(o.id!, o);
    // An acked job is gone (no done retention).
    if (o.kind === "settlement") expect(await queue.view().job(o.work!)).toBeNull();
  }
  // Every id some call named is held by its winner's job, or by none when every call naming it was refused.
  const named = new Set(outcomes.map((o) => o.id!));
  for (const id of named) {
    const info = await queue.view().job(id);
    const winner = winners.get(id);
    if (winner === undefined) {
      expect(info, `no call naming ${id} succeeded, yet a job holds it`).toBeNull();
      continue;
    }
    expect(info, `${winner.kind} ${id} succeeded, yet no job holds it`).not.toBeNull();
    expect(info!.headers).toEqual(winner.kind === "settlement" ? { step: "1" } : {});
  }
  // And its payload is the winner's, read as a worker reads it.
  const pending = await queue.claimBatch("q", named.size + 10);
  for (const job of pending) expect(dec(job.payload)).toBe(winners.get(job.id)!.payload);
  expect(new Set(pending.map((j) => j.id))).toEqual(new Set(winners.keys()));
  for (const job of pending) await queue.releaseClaim(job);
}
