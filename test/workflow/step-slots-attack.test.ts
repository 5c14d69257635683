/**
 * @module maxConcurrentSteps attacked with chained settlements and worker
 * claims mixed: runs of random length, steps of random duration, a store of
 * random latency and payloads that are sometimes offloaded (a settlement
 * then reserves the next step's slot after its own slot was freed). The
 * runner calls in progress never exceed the limit, and every run finishes.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, StepOutcome, withLatency } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { GatedStore } from "../support/gated-store.js";
import { dec, enc, openEnv, runIndexBackfilled, runnerOf, settle, until } from "./helpers.js";

/** A small deterministic generator, so a failing seed can be run again. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** Yields `n` times to the event loop's check phase: the store's timers and other steps' settlements interleave. */
async function yieldTimes(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

describe("maxConcurrentSteps is never exceeded", () => {
  it("slots 1..5, chained and claimed steps mixed, offloaded payloads, a store of random latency", async () => {
    for (let slots = 1; slots <= 5; slots++) {
      const random = rng(slots * 7919);
      let running = 0;
      let most = 0;
      const runner = runnerOf(async (s) => {
        running++;
        most = Math.max(most, running);
        try {
          await yieldTimes(Math.floor(random() * 4));
          const [left, pad] = dec(s.payload).split(":") as [string, string];
          const n = Number(left);
          if (n === 0) return StepOutcome.succeed(enc(`done ${s.stepNumber}`));
          // Above the offload threshold about one step in three: that settlement awaits its payload's put.
          const big = random() < 0.35;
          return StepOutcome.continueNow(enc(`${n - 1}:${big ? "x".repeat(200) : pad.slice(0, 4)}`));
        } finally {
          running--;
        }
      });
      const store = withLatency(new MemoryStore(), { ms: 0.5, jitterMs: 0.5, seed: slots });
      const env = await openEnv(runner, {
        store,
        queueOptions: { payloadOffloadBytes: 64 },
        configure: (b) => b.maxConcurrentSteps(slots),
        start: false,
      });
      // Steps the worker claimed itself; the others were claimed by their previous step's settlement.
      let claimed = 0;
      const claimBatch = env.queue.claimBatch.bind(env.queue);
      env.queue.claimBatch = async (q, max, lease) => {
        const jobs = await claimBatch(q, max, lease);
        claimed += jobs.length;
        return jobs;
      };
      const worker = env.runtime.spawn();
      await runIndexBackfilled(env.queue);
      // Submitted a few at a time with pauses, so little waits pending and settlements chain often; now and
      // then more runs than slots, so worker claims and chained steps compete for the same slots.
      const runs: { runId: string; steps: number }[] = [];
      for (let wave = 0; wave < 25; wave++) {
        const n = 1 + Math.floor(random() * (slots + 1));
        for (let i = 0; i < n; i++) {
          const steps = 1 + Math.floor(random() * 8);
          const { runId } = await env.runtime.submit({ input: enc(`${steps - 1}:`) });
          runs.push({ runId, steps });
        }
        await yieldTimes(Math.floor(random() * 30));
      }
      for (const r of runs) {
        await env.runtime.wait(r.runId);
        expect(dec((await env.runtime.outcome(r.runId))!.result)).toBe(`done ${r.steps - 1}`);
      }
      await worker.shutdown();
      await env.queue.close();
      const steps = runs.reduce((a, r) => a + r.steps, 0);
      expect({ slots, most }).toEqual({ slots, most: Math.min(most, slots) });
      // Both paths were taken: some steps chained, some claimed by the worker.
      expect(claimed).toBeGreaterThan(0);
      expect(claimed).toBeLessThan(steps);
    }
  }, 120_000);

  it("a claim that fails reading an offloaded payload gives back its count of claims in flight: a one-slot worker chains after it", async () => {
    const STEPS = 5;
    let failures = 0;
    const store = failWhen(new MemoryStore(), (call, key) => {
      if (call !== "get" || !key.includes("payloads/") || failures >= 1) return undefined;
      failures++;
      return new Error("the store is unreachable");
    });
    const runner = runnerOf(async (s) =>
      s.stepNumber + 1 < STEPS ? StepOutcome.continueNow(enc(String(s.stepNumber))) : StepOutcome.succeed(enc(`done ${s.stepNumber}`)),
    );
    const env = await openEnv(runner, { store, queueOptions: { payloadOffloadBytes: 64 }, configure: (b) => b.maxConcurrentSteps(1) });
    await runIndexBackfilled(env.queue);
    // Step 0's payload is offloaded: the worker's claim reads it, fails once, and the worker claims again.
    const first = await env.runtime.submit({ input: enc("x".repeat(200)) });
    await env.runtime.wait(first.runId);
    expect(failures).toBe(1);
    expect(dec((await env.runtime.outcome(first.runId))!.result)).toBe(`done ${STEPS - 1}`);
    // A count left behind by the failed claim would leave this worker no slot to reserve: every step claimed apart.
    const before = env.queue.engineStats.walBatches;
    const { runId } = await env.runtime.submit({ input: enc("") });
    await env.runtime.wait(runId);
    expect(dec((await env.runtime.outcome(runId))!.result)).toBe(`done ${STEPS - 1}`);
    expect(env.queue.engineStats.walBatches - before).toBe(STEPS + 2);
    expect(env.logged.length).toBeGreaterThan(0);
    await env.stop();
  });

  it("a settlement that offloads its payload frees its slot before it reserves: a worker claim taking that slot meanwhile is counted, the limit holds", async () => {
    // Two slots. Run "a" continues with a payload past the offload threshold; its settlement frees its slot, then
    // awaits the payload's put (held) before it decides whether to chain. Run "b" holds the other slot throughout.
    // Run "c", pending, is claimed by the worker into the freed slot. Between the claim's end (the queue stops
    // counting its jobs as claimed) and the worker starting them there are a few turns; the wrapper below widens
    // them into a window where "a"'s put lands and its settlement decides whether to chain, with "c" counted
    // nowhere in the queue and not yet started. Without the worker counting its claim, "a" chained its next step
    // into the slot "c" took: three runner calls at once with two slots.
    let running = 0;
    let most = 0;
    let releaseA: () => void = () => undefined;
    const aHeld = new Promise<void>((r) => (releaseA = r));
    let releaseB: () => void = () => undefined;
    const bHeld = new Promise<void>((r) => (releaseB = r));
    // Run "a"'s next step stays in its runner until "c"'s has started, so the two would overlap if both had a slot.
    let cStarted: () => void = () => undefined;
    const cRunning = new Promise<void>((r) => (cStarted = r));
    const runner = runnerOf(async (s) => {
      running++;
      most = Math.max(most, running);
      try {
        const input = dec(s.payload);
        if (input === "b") await bHeld;
        if (input === "a") await aHeld;
        if (input === "c") cStarted();
        if (input.startsWith("x")) await cRunning;
        if (input === "a") return StepOutcome.continueNow(enc("x".repeat(200)));
        return StepOutcome.succeed(enc(`done ${input.slice(0, 1)}`));
      } finally {
        running--;
      }
    });
    const store = new GatedStore(new MemoryStore());
    const env = await openEnv(runner, { store, queueOptions: { payloadOffloadBytes: 64 }, configure: (b) => b.maxConcurrentSteps(2), start: false });
    let armed = false;
    const claimBatch = env.queue.claimBatch.bind(env.queue);
    env.queue.claimBatch = async (q, max, lease) => {
      const jobs = await claimBatch(q, max, lease);
      if (armed && jobs.length > 0) {
        armed = false;
        await store.waitHeld(1);
        const put = store.held[0]!.key;
        store.release(put);
        await store.landed(put);
        await settle();
      }
      return jobs;
    };
    const worker = env.runtime.spawn();
    await runIndexBackfilled(env.queue);
    const b = await env.runtime.submit({ input: enc("b") });
    const a = await env.runtime.submit({ input: enc("a") });
    await until(() => running === 2, "runs a and b running");
    const c = await env.runtime.submit({ input: enc("c") });
    store.hold = (key) => key.includes("payloads/");
    armed = true;
    releaseA();
    for (const r of [a, c]) await env.runtime.wait(r.runId);
    releaseB();
    await env.runtime.wait(b.runId);
    expect(dec((await env.runtime.outcome(a.runId))!.result)).toBe("done x");
    expect(dec((await env.runtime.outcome(c.runId))!.result)).toBe("done c");
    expect(most).toBe(2);
    await worker.shutdown();
    await env.queue.close();
  });
});
