/**
 * @module A step opens without an await when the queue answers its reads
 * in the turn (`kvGetNow`, `kvTokenNow`), and through awaited reads
 * otherwise; with step output replay on, it runs through a path of its own.
 * Every way a step can end must come out the same on each path: the run's
 * end and every step's history entry.
 */
import { describe, expect, it } from "vitest";
import { StepError, StepOutcome, type StepRunner } from "taquba";
import { decodeRunRecord, encodeRunRecord } from "../../runtime/workflow/records/records.js";
import type { RunHistory } from "../../runtime/workflow/runs/run-history.js";
import { dec, enc, type Env, openEnv, until } from "./helpers.js";

/** Runs whose first payload names how they end (see the runner). */
const RUNS = ["go", "throw", "cancel", "fail", "cancelled-meanwhile", "wait"] as const;

interface Ended {
  run: string;
  status: string;
  errorKind: string | undefined;
  finalStep: number | undefined;
  result: string | undefined;
  steps: unknown[];
  kv: (string | null)[];
}

/** What a run's history says of its steps, without times. */
function stepsOf(h: RunHistory | null): unknown[] {
  return (h?.steps ?? []).map((s) => ({
    step: s.step,
    outcomes: s.attempts.map((a) => [a.attempt, a.outcome, a.error]),
    transition: s.transition?.kind,
    signal: s.signal,
    memoKeys: s.memoKeys,
    kvPuts: s.kvPuts,
    kvDeletes: s.kvDeletes,
  }));
}

async function runAll(opts: { inTurnReads: boolean; replay: boolean }): Promise<{ ended: Ended[]; awaitedReads: number }> {
  let env: Env | undefined;
  const runner: StepRunner = {
    async runStep(s) {
      const [kind, n] = dec(s.payload).split(":") as [string, string | undefined];
      const step = Number(n ?? 0);
      await s.memo.put("seen", enc(`${kind}:${step}`));
      s.effects.put(`app/${s.runId}/${step}`, enc(kind));
      if (step > 0) s.effects.delete(`app/${s.runId}/${step - 1}`);
      if (kind === "throw" && step === 1) throw StepError.permanent(new Error("the runner broke"));
      if (kind === "cancel" && step === 1) return StepOutcome.cancel("the runner stopped it");
      if (kind === "fail" && step === 1) return StepOutcome.fail("the runner failed it");
      if (kind === "cancelled-meanwhile" && step === 1) {
        // A cancel recorded on the run record while the runner runs, as another process's cancel first writes it.
        const key = `workflow/runs/workflow-steps/${s.runId}`;
        const run = decodeRunRecord((await env!.queue.kvGet(key))!, key);
        await env!.queue.kvPut(key, encodeRunRecord({ ...run, cancelRequested: true }));
      }
      if (kind === "wait" && step === 1) return StepOutcome.continueOnSignal(enc(`woken:${step + 1}`), `go-${s.runId}`, 3_600_000);
      if (kind === "woken") return StepOutcome.succeed(enc(`signal ${dec(s.signal)}`));
      return step >= 3 ? StepOutcome.succeed(enc(`done ${kind}`)) : StepOutcome.continueNow(enc(`${kind}:${step + 1}`));
    },
  };
  let awaitedReads = 0;
  env = await openEnv(runner, {
    configure: (b) => (opts.replay ? b.stepOutputReplay() : b),
    // The same queue answering its KV reads only when awaited: a view of it without the in-turn reads and key references.
    wrapQueue: opts.inTurnReads
      ? undefined
      : (q) =>
          new Proxy(q, {
            get(target, name) {
              if (name === "kvGetNow" || name === "kvTokenNow" || name === "kvBorrowNow" || name === "kvKeyRef") return undefined;
              const v = Reflect.get(target, name, target) as unknown;
              if (name === "kvGet")
                return (k: string) => {
                  awaitedReads++;
                  return target.kvGet(k);
                };
              return typeof v === "function" ? v.bind(target) : v;
            },
          }),
  });
  try {
    const ended: Ended[] = [];
    for (const run of RUNS) {
      const { runId } = await env.runtime.submit({ runId: run, input: enc(`${run}:0`) });
      if (run === "wait") {
        await until(async () => (await env!.runtime.inspectRun(runId))?.steps.some((s) => s.waiting?.signalKey !== undefined) === true, "the wait");
        await env.runtime.signal(`go-${runId}`, enc("hello"));
      }
      const end = await env.runtime.wait(runId);
      const t = end.termination;
      const kv = await Promise.all([0, 1, 2, 3].map(async (i) => dec(await env!.queue.kvGet(`app/${runId}/${i}`))));
      ended.push({
        run,
        status: t.status,
        errorKind: t.errorKind,
        finalStep: t.finalStep,
        result: end.outcome?.result === undefined ? undefined : dec(end.outcome.result),
        steps: stepsOf(await env.runtime.inspectRun(runId)),
        kv,
      });
    }
    return { ended, awaitedReads };
  } finally {
    await env.stop();
  }
}

describe("a step opened with in-turn reads, with awaited reads, and with step output replay", () => {
  it("ends every run the same way, with the same step histories and committed effects", async () => {
    const fast = await runAll({ inTurnReads: true, replay: false });
    expect(fast.ended.map((e) => [e.run, e.status, e.errorKind, e.finalStep, e.result])).toEqual([
      ["go", "succeeded", undefined, 3, "done go"],
      ["throw", "failed", "permanent", 1, undefined],
      ["cancel", "cancelled", "runner", 1, undefined],
      ["fail", "failed", "runner", 1, undefined],
      ["cancelled-meanwhile", "cancelled", "cancelled", 1, undefined],
      ["wait", "succeeded", undefined, 2, "signal hello"],
    ]);
    // The runner's staged effects commit only with a settlement that keeps them: not a cancel's from outside, not a failure's.
    expect(fast.ended.map((e) => e.kv)).toEqual([
      ["null", "null", "null", "go"],
      ["throw", "null", "null", "null"],
      ["null", "cancel", "null", "null"],
      ["null", "fail", "null", "null"],
      ["cancelled-meanwhile", "null", "null", "null"],
      ["null", "null", "woken", "null"],
    ]);
    const slow = await runAll({ inTurnReads: false, replay: false });
    expect(slow.awaitedReads).toBeGreaterThan(0);
    expect(slow.ended).toEqual(fast.ended);
    for (const inTurnReads of [true, false]) {
      const replayed = await runAll({ inTurnReads, replay: true });
      expect(replayed.ended).toEqual(fast.ended);
    }
  });
});
