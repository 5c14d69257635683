/**
 * @module The step path that trusts the run record it carried while the
 * engine's value token for it is unchanged (steps/step-carry.ts), attacked
 * over a LocalStore whose engine checkpoints after every WAL object (so
 * run records are repacked between any two steps, and job records paged
 * out and read back from segments): cancels and signals
 * sent from other runs' runners at every point of their chains, and a
 * second runtime taking the runs over from a stopped first one. No step
 * starts once its run's cancel has returned, none runs twice, no signal is
 * lost and every other run ends with all its steps.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, StepOutcome, type Step, type StepRunner } from "taquba";
import { dec, enc, openEnv, type Env } from "./helpers.js";
import { useTempDirs } from "../support/temp-dirs.js";

const HOUR = 3_600_000;

/**
 * Engine options that checkpoint at every WAL object (each checkpoint packs
 * the run records it stores, so their tokens change under the steps) and
 * page job records out with no cache.
 */
const queueOptions = {
  engineOptions: {
    checkpointWalObjects: 1,
    pageValues: { keyPrefixes: ["j/"], minBytes: 1, cacheBytes: 0 },
  },
};

const tempDir = useTempDirs("token-attack-");

async function localStore(): Promise<LocalStore> {
  const dir = await tempDir();
  return new LocalStore(dir);
}

/** One start of a runner, in the order starts happened. */
interface Start {
  readonly runId: string;
  readonly step: number;
  readonly attempt: number;
}

describe("the carried run record under cancels, signals, checkpoints and paging", () => {
  it("cancels sent from other runs' runners at every point of a chain: no step starts after its run's cancel returned, none twice", async () => {
    const RUNS = 8;
    const STEPS = 10;
    const starts: Start[] = [];
    /** Index into `starts` when each run's cancel returned true. */
    const cancelledAt = new Map<string, number>();
    const cancels: Promise<void>[] = [];
    let env: Env | undefined;
    const runner: StepRunner = {
      async runStep(s: Step) {
        starts.push({ runId: s.runId, step: s.stepNumber, attempt: s.attempt });
        const i = Number(s.runId.slice(2));
        // Run i cancels run i+1 at a step that moves with i: early, late, mid-chain; odd runs are never cancelled.
        const target = i + 1;
        if (target < RUNS && target % 2 === 0 && s.stepNumber === (i * 3) % STEPS) {
          const victim = `r-${target}`;
          cancels.push(
            env!.runtime.cancel(victim).then((ok) => {
              if (ok) cancelledAt.set(victim, starts.length);
            }),
          );
        }
        // Some steps yield a turn or two, so chains interleave with the cancels' commits and checkpoints.
        for (let k = 0; k < (s.stepNumber + i) % 3; k++) await new Promise<void>((r) => setImmediate(r));
        return s.stepNumber + 1 < STEPS ? StepOutcome.continueNow(enc(String(s.stepNumber + 1))) : StepOutcome.succeed(enc(`done ${s.runId}`));
      },
    };
    env = await openEnv(runner, { store: await localStore(), queueOptions });
    try {
      for (let i = 0; i < RUNS; i++) await env.runtime.submit({ runId: `r-${i}`, input: enc("0") });
      const ends = new Map<string, Awaited<ReturnType<Env["runtime"]["wait"]>>>();
      for (let i = 0; i < RUNS; i++) ends.set(`r-${i}`, await env.runtime.wait(`r-${i}`));
      await Promise.all(cancels);
      for (let i = 0; i < RUNS; i++) {
        const runId = `r-${i}`;
        const mine = starts.filter((s) => s.runId === runId);
        // No step ran twice (nothing failed, so every start is a first attempt of a new step).
        expect(mine.map((s) => s.attempt)).toEqual(mine.map(() => 1));
        expect(new Set(mine.map((s) => s.step)).size).toBe(mine.length);
        const end = ends.get(runId)!;
        const at = cancelledAt.get(runId);
        if (at !== undefined) {
          expect(end.termination.status).toBe("cancelled");
          // Nothing of the run started after its cancel returned.
          expect(starts.slice(at).filter((s) => s.runId === runId)).toEqual([]);
        } else {
          if (i % 2 === 1 || i === 0) expect(end.termination.status).toBe("succeeded");
          if (end.termination.status === "succeeded") expect(mine.map((s) => s.step)).toEqual([...Array(STEPS).keys()]);
        }
      }
      // The cancels did land on runs still running (the test would prove nothing otherwise).
      expect(cancelledAt.size).toBeGreaterThanOrEqual(2);
    } finally {
      await env.stop();
    }
  });

  it("signals sent from other runs' runners while the waiters' chains run: each waiter gets its own signal once", async () => {
    const RUNS = 8;
    const seen = new Map<string, string[]>();
    const runner: StepRunner = {
      async runStep(s: Step) {
        const i = Number(s.runId.slice(2));
        if (s.stepNumber === 4) {
          (seen.get(s.runId) ?? seen.set(s.runId, []).get(s.runId)!).push(dec(s.signal));
          return StepOutcome.succeed(s.signal ?? enc("timeout"));
        }
        // Run i signals run i-1 at a step that moves with i, before or after that run waits.
        if (i > 0 && s.stepNumber === i % 4) await env.runtime.signal(`key-${i - 1}`, enc(`from ${i}`));
        if (i === RUNS - 1 && s.stepNumber === 3) await env.runtime.signal(`key-${i}`, enc("from itself"));
        if (s.stepNumber === 3) return StepOutcome.continueOnSignal(enc("4"), `key-${i}`, HOUR);
        return StepOutcome.continueNow(enc(String(s.stepNumber + 1)));
      },
    };
    const env = await openEnv(runner, { store: await localStore(), queueOptions });
    try {
      for (let i = 0; i < RUNS; i++) await env.runtime.submit({ runId: `r-${i}`, input: enc("0") });
      for (let i = 0; i < RUNS; i++) {
        const end = await env.runtime.wait(`r-${i}`);
        expect(end.termination.status).toBe("succeeded");
        const want = i === RUNS - 1 ? "from itself" : `from ${i + 1}`;
        expect(dec(end.outcome!.result)).toBe(want);
        expect(seen.get(`r-${i}`)).toEqual([want]);
      }
    } finally {
      await env.stop();
    }
  });

  it("a second runtime over the same directory takes over runs a stopped first one left mid-chain: each step's runner once, on its first attempt", async () => {
    const RUNS = 6;
    const STEPS = 12;
    const starts: Start[] = [];
    let stopAfter = 20;
    let release: (() => void) | undefined;
    const stopping = new Promise<void>((r) => {
      release = r;
    });
    const runner: StepRunner = {
      async runStep(s: Step) {
        starts.push({ runId: s.runId, step: s.stepNumber, attempt: s.attempt });
        if (--stopAfter === 0) release!();
        return s.stepNumber + 1 < STEPS ? StepOutcome.continueNow(enc(String(s.stepNumber + 1))) : StepOutcome.succeed(enc("done"));
      },
    };
    const store = await localStore();
    const clock = new MockClock(1_700_000_000_000);
    const first = await openEnv(runner, { store, clock, queueOptions });
    for (let i = 0; i < RUNS; i++) await first.runtime.submit({ runId: `r-${i}`, input: enc("0") });
    await stopping;
    await first.stop();
    const before = starts.length;
    expect(before).toBeLessThan(RUNS * STEPS);
    // A fresh store object over the directory, as another process would open it.
    const second = await openEnv(runner, { store: new LocalStore(store.root), clock, queueOptions });
    try {
      for (let i = 0; i < RUNS; i++) expect((await second.runtime.wait(`r-${i}`)).termination.status).toBe("succeeded");
      for (let i = 0; i < RUNS; i++) {
        const mine = starts.filter((s) => s.runId === `r-${i}`);
        // Each step's runner ran once, on its first attempt: a step the stopping worker claimed and gave back
        // unstarted is not counted (the queue's close waits for the give-back).
        expect(mine.map((s) => `${s.step}/${s.attempt}`)).toEqual([...Array(STEPS).keys()].map((k) => `${k}/1`));
      }
    } finally {
      await second.stop();
    }
  });
});
