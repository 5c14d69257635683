/**
 * @module A claim's cancellation (its lease entry is its cancel state) against
 * the other ends of the claim, in every order: a cancel request, the lease's
 * expiry, an ack and a nack of one claim, each applied in turn and compared
 * with a model of the job; a second claim beside it is never touched. Then a
 * cancel whose commit is in flight while the lease expires, the job is acked
 * or nacked, or claimed again.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, type ClaimedJob } from "taquba";
import { enc, openQueue, settle } from "./helpers.js";

type Step = "cancel" | "expire" | "ack" | "nack";

const LEASE = 1000;

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((x, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [x, ...rest]));
}

/** Every order of every non-empty subset of the steps. */
function orders(): Step[][] {
  const steps: Step[] = ["cancel", "expire", "ack", "nack"];
  const out: Step[][] = [];
  for (let mask = 1; mask < 1 << steps.length; mask++) out.push(...permutations(steps.filter((_, i) => (mask & (1 << i)) !== 0)));
  return out;
}

/** What the model expects of each step, and of the job after all of them. */
interface Model {
  job: "claimed" | "pending" | "done" | "gone";
  held: boolean;
  cancelRequested: boolean;
  /** Whether a request reached the claim while it held the job (its signal is aborted). */
  signalled: boolean;
}

describe("a claim's cancel state against its ack, nack and expiry (attack)", () => {
  it("cancel, expiry, ack and nack of one claim in every order end as the model says, and leave a second claim alone", async () => {
    for (const order of orders()) {
      const { queue, clock } = await openQueue({ queueConfigs: { q: { backoff: { baseMs: 1, maxMs: 1 } } } });
      const { jobId } = await queue.enqueue("q", enc("a"));
      await queue.enqueue("q", enc("b"));
      const a = (await queue.claim("q", LEASE))!;
      const b = (await queue.claim("q", 60 * LEASE))!;
      expect(a.id).toBe(jobId);
      // Read the signal before the steps in half the orders: made early or late, it must end the same.
      const early = order.length % 2 === 0 ? a.cancelSignal : undefined;
      const m: Model = { job: "claimed", held: true, cancelRequested: false, signalled: false };
      const label = order.join(" > ");
      for (const step of order) {
        if (step === "cancel") {
          const want = m.job === "claimed" ? "requested" : m.job === "pending" ? "removed" : "not_found";
          expect(await queue.cancelJob(jobId), `${label}: cancel`).toBe(want);
          if (want === "requested") {
            m.cancelRequested = true;
            if (m.held) m.signalled = true;
          } else if (want === "removed") m.job = "gone";
        } else if (step === "expire") {
          clock.advance(LEASE + 1);
          await settle();
          if (m.held) {
            m.held = false;
            m.job = "pending";
          }
        } else if (step === "ack" || step === "nack") {
          const settling = step === "ack" ? queue.ack(a) : queue.nack(a, "failed");
          if (m.held) {
            await settling;
            m.held = false;
            m.job = step === "ack" ? "done" : "pending";
          } else await expect(settling, `${label}: ${step}`).rejects.toBeInstanceOf(ClaimLostError);
        }
        await settle();
      }
      expect(a.cancelSignal.aborted, label).toBe(m.signalled);
      if (early !== undefined) expect(early).toBe(a.cancelSignal);
      if (m.signalled) expect(String(a.cancelSignal.reason)).toContain(jobId);
      const info = await queue.view().job(jobId);
      // A done job is not kept (no retention configured): it reads as absent, like a removed one.
      if (m.job === "gone" || m.job === "done") expect(info, label).toBeNull();
      else {
        expect(info?.state === "scheduled" ? "pending" : info?.state, label).toBe(m.job);
        expect(info?.cancelRequested === true, label).toBe(m.cancelRequested);
      }
      // The job claimed again (when it went back) starts cancelled exactly when a request stands.
      if (m.job === "pending") {
        clock.advance(2);
        await settle();
        const again = (await queue.claim("q", LEASE)) as ClaimedJob;
        expect(again.id, label).toBe(jobId);
        expect(again.cancelSignal.aborted, label).toBe(m.cancelRequested);
        await queue.ack(again);
      }
      // The claim beside it heard nothing and still settles.
      expect(b.cancelSignal.aborted, label).toBe(false);
      await queue.ack(b);
      await queue.close();
    }
  });

  it("a cancel in flight while the lease expires: the request stands, the lost claim cannot settle, and the next claim starts cancelled", async () => {
    const { queue, clock } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"));
    const a = (await queue.claim("q", LEASE))!;
    const signal = a.cancelSignal;
    const cancelling = queue.cancelJob(jobId);
    clock.advance(LEASE + 1);
    expect(await cancelling).toBe("requested");
    await settle();
    await expect(queue.ack(a)).rejects.toBeInstanceOf(ClaimLostError);
    const again = (await queue.claim("q", LEASE))!;
    expect(again.id).toBe(jobId);
    expect(again.attempt).toBe(2);
    expect(again.cancelSignal.aborted).toBe(true);
    // The first claim's signal is its own: a request after the claim was lost may or may not reach it, never the other way round.
    expect(signal).toBe(a.cancelSignal);
    await queue.ack(again);
    expect(await queue.view().job(jobId)).toBeNull();
    expect(await queue.cancelJob(jobId)).toBe("not_found");
    await queue.close();
  });

  for (const end of ["ack", "nack"] as const) {
    it(`a cancel in flight while its claim is ${end}ed: both commit, the ${end} wins, and nothing is left signalled or held`, async () => {
      const { queue, clock } = await openQueue({ queueConfigs: { q: { backoff: { baseMs: 1, maxMs: 1 } } } });
      const { jobId } = await queue.enqueue("q", enc("a"));
      const a = (await queue.claim("q", LEASE))!;
      const cancelling = queue.cancelJob(jobId);
      const settling = end === "ack" ? queue.ack(a) : queue.nack(a, "failed");
      expect(await cancelling).toBe("requested");
      await settling;
      await settle();
      const info = await queue.view().job(jobId);
      if (end === "ack") expect(info).toBeNull();
      else {
        expect(info).toMatchObject({ cancelRequested: true });
        clock.advance(2);
        await settle();
        const again = (await queue.claim("q", LEASE))!;
        expect(again.id).toBe(jobId);
        expect(again.cancelSignal.aborted).toBe(true);
        await queue.ack(again);
      }
      await queue.close();
    });
  }
});
