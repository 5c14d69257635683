/**
 * @module A step that continues at once takes its run's next step in its
 * own settlement (the queue's `ackClaimingNext`): one engine commit per step
 * when one worker works a run. These tests hold the fast path to the
 * guarantees of the ordinary one: a crash right after such a settlement,
 * the next step's lease expiring, a cancel between the steps, a worker that
 * stops, waiting work that must not be overtaken, and queues with admission
 * limits (which fall back to ack, then claim).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type ObjectStore, type Step } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { advanceUntil, dec, enc, holdableStore, openEnv, runIndexBackfilled, runnerOf, settle, until } from "./helpers.js";

const STEPS = 5;
const tempDir = useTempDirs("wf-chain-");

/** Continues with `<payload><step>;` until the last step, which succeeds with it. */
function chain(seen: Step[], steps = STEPS) {
  return runnerOf(async (s) => {
    seen.push(s);
    const acc = `${dec(s.payload)}${s.stepNumber};`;
    return s.stepNumber + 1 < steps ? StepOutcome.continueNow(enc(acc)) : StepOutcome.succeed(enc(acc));
  });
}

const expected = (steps = STEPS) => Array.from({ length: steps }, (_, i) => `${i};`).join("");

describe("a step that continues at once claims the next one in its settlement", () => {
  it("one worker works a run at one engine commit per step, every step on its first attempt", async () => {
    const seen: Step[] = [];
    const env = await openEnv(chain(seen));
    await runIndexBackfilled(env.queue);
    const before = env.queue.engineStats.walBatches;
    const { runId } = await env.runtime.submit({ input: enc("") });
    await env.runtime.wait(runId);
    const commits = env.queue.engineStats.walBatches - before;
    expect(dec((await env.runtime.outcome(runId))!.result)).toBe(expected());
    expect(seen.map((s) => [s.stepNumber, s.attempt])).toEqual(Array.from({ length: STEPS }, (_, i) => [i, 1]));
    // The submission, the claim of step 0, then one settlement per step (each taking the next step).
    // Acking, then claiming each next step apart, takes 2 * STEPS + 1.
    expect(commits).toBe(STEPS + 2);
    const stats = await env.queue.view().stats("workflow-steps");
    expect(stats).toMatchObject({ pending: 0, claimed: 0, scheduled: 0 });
    await env.stop();
  });

  it("a worker with one slot chains its run's steps too: the settling step's slot is the one the next step takes", async () => {
    const seen: Step[] = [];
    const env = await openEnv(chain(seen), { configure: (b) => b.maxConcurrentSteps(1) });
    await runIndexBackfilled(env.queue);
    const before = env.queue.engineStats.walBatches;
    const { runId } = await env.runtime.submit({ input: enc("") });
    await env.runtime.wait(runId);
    expect(dec((await env.runtime.outcome(runId))!.result)).toBe(expected());
    // As with many slots: the submission, the claim of step 0, then one settlement per step.
    expect(env.queue.engineStats.walBatches - before).toBe(STEPS + 2);
    await env.stop();
  });

  it("a queue with a concurrency or rate limit falls back to ack, then claim, and admission still holds", async () => {
    for (const limit of [{ concurrency: { limit: 1 } }, { rateLimit: { limit: 1000, periodMs: 1000 } }]) {
      const seen: Step[] = [];
      let running = 0;
      let most = 0;
      const runner = runnerOf(async (s) => {
        running++;
        most = Math.max(most, running);
        await settle(2);
        running--;
        return chain(seen).runStep(s);
      });
      const env = await openEnv(runner, { queueOptions: { queueConfigs: { "workflow-steps": limit } } });
      await runIndexBackfilled(env.queue);
      const before = env.queue.engineStats.walBatches;
      const { runId } = await env.runtime.submit({ input: enc("") });
      await env.runtime.wait(runId);
      expect(dec((await env.runtime.outcome(runId))!.result)).toBe(expected());
      expect(env.queue.engineStats.walBatches - before, JSON.stringify(limit)).toBe(2 * STEPS + 1);
      // Two runs under a limit of one: never two steps at once.
      if ("concurrency" in limit) {
        const a = await env.runtime.submit({ input: enc("") });
        const b = await env.runtime.submit({ input: enc("") });
        await env.runtime.wait(a.runId);
        await env.runtime.wait(b.runId);
        expect(most).toBe(1);
      }
      await env.stop();
    }
  });

  it("a run under a flow rule falls back to ack, then claim, so the rule's limit counts every step", async () => {
    const seen: Step[] = [];
    const runner = { ...chain(seen), flowRules: () => ({ tenants: { concurrency: { limit: 1 } } }) };
    const env = await openEnv(runner);
    await runIndexBackfilled(env.queue);
    const before = env.queue.engineStats.walBatches;
    const { runId } = await env.runtime.submit({ input: enc(""), options: { flow: { rule: "tenants", concurrencyKey: "acme" } } });
    await env.runtime.wait(runId);
    expect(dec((await env.runtime.outcome(runId))!.result)).toBe(expected());
    expect(env.queue.engineStats.walBatches - before).toBe(2 * STEPS + 1);
    await env.stop();
  });

  it("a chained run does not overtake work already waiting on the step queue", async () => {
    const order: string[] = [];
    const runner = runnerOf(async (s) => {
      order.push(`${dec(s.payload).slice(0, 1)}${s.stepNumber}`);
      const tag = dec(s.payload).slice(0, 1);
      return s.stepNumber + 1 < 3 ? StepOutcome.continueNow(enc(tag)) : StepOutcome.succeed(enc(tag));
    });
    // One slot: run b's first step is pending when run a's first step settles.
    const env = await openEnv(runner, { start: false, configure: (b) => b.maxConcurrentSteps(1) });
    const a = await env.runtime.submit({ input: enc("a") });
    const b = await env.runtime.submit({ input: enc("b") });
    const worker = env.runtime.spawn();
    await env.runtime.wait(a.runId);
    await env.runtime.wait(b.runId);
    expect(order).toEqual(["a0", "b0", "a1", "b1", "a2", "b2"]);
    await worker.shutdown();
    await env.queue.close();
  });

  it("a chained run goes on while steps wait only when the worker has a slot for each of them as well", async () => {
    for (const slots of [3, 2]) {
      const store = holdableStore();
      let openGate: () => void = () => undefined;
      const gate = new Promise<void>((r) => (openGate = r));
      const seen: string[] = [];
      const runner = runnerOf(async (s) => {
        const tag = dec(s.payload);
        seen.push(`${tag}${s.stepNumber}`);
        if (tag === "a" && s.stepNumber === 0) await gate;
        return s.stepNumber + 1 < 2 ? StepOutcome.continueNow(enc(tag)) : StepOutcome.succeed(enc(tag));
      });
      const env = await openEnv(runner, { store, start: false });
      // The steps the worker's own claims took (a chained step is not among them).
      const claimed: string[] = [];
      const q = env.queue;
      const port = new Proxy(q, {
        get(target, prop) {
          if (prop === "claimBatch")
            return async (name: string, max: number, leaseMs?: number) => {
              const jobs = await target.claimBatch(name, max, leaseMs);
              for (const j of jobs) claimed.push(`${dec(j.payload)}${j.headers["workflow.step"]}`);
              return jobs;
            };
          const v: unknown = Reflect.get(target, prop, target);
          return typeof v === "function" ? v.bind(target) : v;
        },
      });
      const runtime = WorkflowRuntime.builder(port, store, runner, NoopTerminalHook).maxConcurrentSteps(slots).build();
      const worker = runtime.spawn();
      await runIndexBackfilled(env.queue);
      const a = await runtime.submit({ input: enc("a") });
      await until(() => seen.includes("a0"), "step a0 running");
      // WAL puts held: c's first step is claimed and waits for its submission to be durable, so the
      // worker's next claim waits too and b's first step stays pending while a0 settles.
      store.hold();
      const c = runtime.submit({ input: enc("c") });
      await until(() => claimed.length > 0 || store.held > 0, "c submitted");
      await settle(5);
      const b = runtime.submit({ input: enc("b") });
      await settle(5);
      openGate();
      await settle(5);
      store.release();
      for (const r of [a, await b, await c]) await runtime.wait(r.runId);
      if (slots === 3) expect(claimed.sort()).toEqual(["a0", "b0", "c0"]);
      // No slot for b0 beside a1 and c0: a1 waits behind b0.
      else expect(seen.indexOf("b0")).toBeLessThan(seen.indexOf("a1"));
      await worker.shutdown();
      await env.queue.close();
    }
  });

  it("the next step claimed in a settlement is redelivered when its lease expires", async () => {
    const seen: Step[] = [];
    let release: () => void = () => undefined;
    const stalled = new Promise<void>((r) => (release = r));
    const runner = runnerOf(async (s) => {
      seen.push(s);
      // Step 1's first delivery stalls past its lease.
      if (s.stepNumber === 1 && s.attempt === 1) await stalled;
      const acc = `${dec(s.payload)}${s.stepNumber};`;
      return s.stepNumber + 1 < 3 ? StepOutcome.continueNow(enc(acc)) : StepOutcome.succeed(enc(acc));
    });
    const env = await openEnv(runner, { configure: (b) => b.leaseMs(10_000).maxConcurrentSteps(2) });
    await runIndexBackfilled(env.queue);
    const before = env.queue.engineStats.walBatches;
    const { runId } = await env.runtime.submit({ input: enc("") });
    await until(() => seen.some((s) => s.stepNumber === 1), "step 1 delivered");
    const first = seen.find((s) => s.stepNumber === 1)!;
    // Taken in step 0's settlement: the submission, step 0's claim and its settlement, no claim of step 1.
    await env.queue.flush();
    expect(env.queue.engineStats.walBatches - before).toBe(3);
    expect((await env.queue.view().job(first.jobId))?.state).toBe("claimed");
    await advanceUntil(env.clock, env.clock.now() + 10_000 + 60_000, async () => seen.filter((s) => s.stepNumber === 1).length >= 2, "step 1 redelivered");
    const second = seen.filter((s) => s.stepNumber === 1)[1]!;
    expect(second).toMatchObject({ jobId: first.jobId, attempt: 2 });
    await env.runtime.wait(runId);
    expect(dec((await env.runtime.outcome(runId))!.result)).toBe("0;1;2;");
    // The stalled delivery's settlement is refused (its claim was lost) and changes nothing.
    release();
    await until(() => env.logged.length > 0, "the lost settlement logged");
    expect(seen.filter((s) => s.stepNumber === 2)).toHaveLength(1);
    expect(dec((await env.runtime.outcome(runId))!.result)).toBe("0;1;2;");
    await env.stop();
  });

  it("a cancel while the settlement that claimed the next step is not yet durable ends the run before that step runs", async () => {
    const store = holdableStore();
    const seen: Step[] = [];
    const runner = runnerOf(async (s) => {
      seen.push(s);
      // Step 0's settlement (with step 1 claimed in it) applies in memory but is held from the store.
      if (s.stepNumber === 0) store.hold();
      return StepOutcome.continueNow(enc("next"));
    });
    const env = await openEnv(runner, { store });
    const { runId } = await env.runtime.submit({ input: enc("") });
    await until(() => store.held > 0, "step 0's settlement written");
    const step1 = (await env.queue.view().listJobs("workflow-steps", "claimed")).items;
    expect(step1).toHaveLength(1);
    const cancelled = env.runtime.cancel(runId);
    store.release();
    expect(await cancelled).toBe(true);
    await env.runtime.wait(runId);
    expect((await env.runtime.outcome(runId))?.status).toBe("cancelled");
    expect(seen.map((s) => s.stepNumber)).toEqual([0]);
    expect(await env.queue.view().job(step1[0]!.id)).toBeNull();
    await env.stop();
  });

  it("a worker that stops while the settlement is in flight gives the claimed next step back, uncounted", async () => {
    const store = holdableStore();
    const seen: Step[] = [];
    const runner = runnerOf(async (s) => {
      seen.push(s);
      if (s.stepNumber === 0) store.hold();
      return StepOutcome.continueNow(enc("next"));
    });
    const env = await openEnv(runner, { store });
    await env.runtime.submit({ input: enc("") });
    await until(() => store.held > 0, "step 0's settlement written");
    const [claimed] = (await env.queue.view().listJobs("workflow-steps", "claimed")).items;
    expect(claimed).toMatchObject({ attempt: 1 });
    const stopped = env.worker!.shutdown();
    store.release();
    await stopped;
    expect(seen.map((s) => s.stepNumber)).toEqual([0]);
    expect(await env.queue.view().job(claimed!.id)).toMatchObject({ state: "pending", attempt: 0 });
    await env.queue.close();
  });

  it("a worker told to stop before the settlement does not take the next step", async () => {
    let stop: () => Promise<void> = async () => undefined;
    let stopping: Promise<void> | undefined;
    const seen: Step[] = [];
    const runner = runnerOf(async (s) => {
      seen.push(s);
      stopping = stop();
      return StepOutcome.continueNow(enc("next"));
    });
    const env = await openEnv(runner);
    stop = () => env.worker!.shutdown();
    await runIndexBackfilled(env.queue);
    const before = env.queue.engineStats.walBatches;
    await env.runtime.submit({ input: enc("") });
    await until(() => stopping !== undefined, "step 0 ran");
    await stopping;
    expect(seen.map((s) => s.stepNumber)).toEqual([0]);
    const [pending] = (await env.queue.view().listJobs("workflow-steps", "pending")).items;
    expect(pending).toMatchObject({ attempt: 0 });
    // The submission, step 0's claim and its settlement: nothing claimed, then given back.
    await env.queue.flush();
    expect(env.queue.engineStats.walBatches - before).toBe(3);
    await env.queue.close();
  });
});

/** Every object of `store`, copied into a new memory store: the store as a crash at this instant leaves it. */
async function snapshot(store: MemoryStore): Promise<MemoryStore> {
  const copy = new MemoryStore();
  for await (const o of store.list("")) {
    const got = await store.get(o.key);
    if (got !== null) await copy.put(o.key, got.body);
  }
  return copy;
}

describe("a crash right after a settlement that claimed the next step", () => {
  it("at every store write of a run, the restart finishes the run once, each step's settlement applied once", { timeout: 120_000 }, async () => {
    // Record the store after every write of one run worked by one worker.
    const inner = new MemoryStore();
    const images: MemoryStore[] = [];
    let taking = Promise.resolve();
    const recording: ObjectStore = {
      get: (k) => inner.get(k),
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
      async put(k, b, o) {
        const r = await inner.put(k, b, o);
        taking = taking.then(async () => void images.push(await snapshot(inner)));
        await taking;
        return r;
      },
    };
    const first = await openEnv(
      runnerOf(async (s) => {
        // Each step's effect is a KV write committed with its settlement.
        s.effects.put(`effect/${s.stepNumber}`, enc(dec(s.payload)));
        return s.stepNumber + 1 < STEPS
          ? StepOutcome.continueNow(enc(`${dec(s.payload)}${s.stepNumber};`))
          : StepOutcome.succeed(enc(`${dec(s.payload)}${s.stepNumber};`));
      }),
      { store: recording },
    );
    await first.runtime.submit({ input: enc(""), runId: "run-0" });
    await first.runtime.wait("run-0");
    await first.stop();
    expect(images.length).toBeGreaterThan(STEPS);

    let claimedAtCrash = 0;
    for (const image of images) {
      const seen: Step[] = [];
      const env = await openEnv(
        runnerOf(async (s) => {
          seen.push(s);
          s.effects.put(`effect/${s.stepNumber}`, enc(dec(s.payload)));
          return s.stepNumber + 1 < STEPS
            ? StepOutcome.continueNow(enc(`${dec(s.payload)}${s.stepNumber};`))
            : StepOutcome.succeed(enc(`${dec(s.payload)}${s.stepNumber};`));
        }),
        { store: image, start: false },
      );
      if (env.queue.recovery.requeued.length > 0) claimedAtCrash++;
      const worker = env.runtime.spawn();
      // Resubmitting is what a restarted application does; it is a no-op once the run exists.
      await env.runtime.submit({ input: enc(""), runId: "run-0" });
      await env.runtime.wait("run-0");
      expect(dec((await env.runtime.outcome("run-0"))!.result)).toBe(expected());
      // Steps settled before the crash do not run again; the rest run once each.
      const rerun = seen.map((s) => s.stepNumber);
      expect(new Set(rerun).size).toBe(rerun.length);
      if (rerun.length > 0) expect(rerun).toEqual(Array.from({ length: rerun.length }, (_, i) => STEPS - rerun.length + i));
      for (let k = 0; k < STEPS; k++) expect(dec(await env.queue.kvGet(`effect/${k}`))).toBe(expected(k));
      expect(await env.queue.view().stats("workflow-steps")).toMatchObject({ pending: 0, claimed: 0, scheduled: 0, dead: 0 });
      await worker.shutdown();
      await env.queue.close();
    }
    // Some crash images hold a step claimed by the settlement before it: recovery requeued it.
    expect(claimedAtCrash).toBeGreaterThan(0);
  });

  it("a SIGKILL while the next step holds the claim its previous step's settlement made: recovery requeues it and the run finishes", {
    timeout: 120_000,
  }, async () => {
    const dir = await tempDir();
    const log = join(dir, "effects.log");
    const script = fileURLToPath(new URL("./fixtures/chain-crash-worker.ts", import.meta.url));
    const child = startScript(script, [dir, log]);
    await child.waitFor((lines) => lines.some((l) => l.startsWith("step1 ")));
    const exit = await child.kill();
    expect(exit.signal, child.stderr()).toBe("SIGKILL");
    expect(backgroundFailures(child)).toEqual([]);
    const [, jobId, attempt, commits] = child.lines.find((l) => l.startsWith("step1 "))!.split(" ");
    expect(attempt).toBe("1");
    // The submission, step 0's claim and step 0's settlement, which claimed step 1 (no claim of its own).
    expect(commits).toBe("3");

    const store = new LocalStore(dir);
    const queue = await Queue.open(store, "wf");
    expect(queue.recovery.requeued).toEqual([jobId]);
    const seen: Step[] = [];
    const runtime = WorkflowRuntime.builder(queue, store, chain(seen, 3), NoopTerminalHook).build();
    const worker = runtime.spawn();
    await runtime.wait("run-0");
    expect((await runtime.outcome("run-0"))?.status).toBe("succeeded");
    expect(seen.map((s) => [s.stepNumber, s.jobId === jobId])).toEqual([
      [1, true],
      [2, false],
    ]);
    // Step 0's memoized effect ran once: its settlement was durable before step 1 was handed out.
    expect((await readFile(log, "utf8")).trim().split("\n")).toHaveLength(1);
    await worker.shutdown();
    await queue.close();
  });
});
