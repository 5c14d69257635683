/**
 * @module Every option object of the workflow runtime, the client and the
 * cluster entries refuses a field that is no option (a misspelt one would
 * otherwise leave its default in use without a word): a `ValidationError`
 * naming the field, listing the options taken and suggesting the close name,
 * raised before anything is written. The same objects spelt right are taken.
 */
import { describe, expect, it } from "vitest";
import { dec, openEnv, runnerOf } from "./helpers.js";
import {
  MemoryStore,
  NoopTerminalHook,
  Queue,
  readOwners,
  runOwnerElection,
  runShardWorkers,
  serveClients,
  StepOutcome,
  TaqubaClient,
  ValidationError,
  WorkflowRuntime,
  withCounting,
  type CountingStore,
  type RunOptions,
  type RunSpec,
  type ScheduleSpec,
} from "taquba";
import { refusal } from "../support/refusal.js";

const enc = (s: string) => new TextEncoder().encode(s);
const runner = { runStep: async () => StepOutcome.succeed(enc("done")) };

/** Asserts `err` refuses `field` alone, lists `options`, and suggests `near` (when given). */
function expectRefused(err: ValidationError, field: string, options: string, near?: string): void {
  expect(err.message).toMatch(/has a field that is not an option/);
  expect(err.issues).toHaveLength(1);
  const issue = err.issues[0]!;
  expect(issue.startsWith(`${field} is not an option (misspelt?); the options are ${options}`)).toBe(true);
  if (near === undefined) expect(issue).not.toMatch(/did you mean/);
  else expect(issue.endsWith(`; did you mean ${near}?`)).toBe(true);
}

async function withRuntime(act: (runtime: WorkflowRuntime, store: CountingStore, queue: Queue) => Promise<void>): Promise<void> {
  const store = withCounting(new MemoryStore());
  const queue = await Queue.open(store, "app");
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();
  try {
    store.reset();
    await act(runtime, store, queue);
  } finally {
    await runtime.close();
  }
}

const RUN_OPTIONS = "headers, priority, maxAttemptsPerStep, runAt, flow, debounce";

describe("the workflow runtime's option objects refuse a field that is no option, before writing", () => {
  it("submit: a misspelt field of the RunSpec, its options, their flow and their debounce", () =>
    withRuntime(async (runtime, store) => {
      const input = enc("x");
      const cases: [RunSpec, string, string, string | undefined][] = [
        [{ input, optons: { priority: 1 } } as unknown as RunSpec, "RunSpec.optons", "input, runId, options, effects", "options"],
        [{ input, runID: "r-1" } as unknown as RunSpec, "RunSpec.runID", "input, runId, options, effects", "runId"],
        [{ input, options: { maxAttemptsPerstep: 3 } as RunOptions }, "RunOptions.maxAttemptsPerstep", RUN_OPTIONS, "maxAttemptsPerStep"],
        [{ input, options: { runat: Date.now() } as RunOptions }, "RunOptions.runat", RUN_OPTIONS, "runAt"],
        [{ input, options: { tenant: "acme" } as RunOptions }, "RunOptions.tenant", RUN_OPTIONS, undefined],
        [
          { input, options: { flow: { rule: "r", concurencyKey: "a" } } as unknown as RunOptions },
          "RunOptions.flow.concurencyKey",
          "rule, concurrencyKey, rateKey",
          "concurrencyKey",
        ],
        [{ input, options: { debounce: { key: "k", periodMS: 10 } } as unknown as RunOptions }, "RunOptions.debounce.periodMS", "key, periodMs", "periodMs"],
      ];
      for (const [spec, field, options, near] of cases) expectRefused(await refusal(() => runtime.submit(spec)), field, options, near);
      expect(store.counts.puts).toBe(0);
      expect((await runtime.listRuns()).runs).toEqual([]);
      // The same objects spelt right are taken.
      const { runId } = await runtime.submit({ input, runId: "r-1", options: { maxAttemptsPerStep: 3, flow: { rule: "r", concurrencyKey: "a" } } });
      expect(runId).toBe("r-1");
      expect((await runtime.listRuns()).runs.map((r) => r.runId)).toEqual(["r-1"]);
    }));

  it("retryRun, listRuns, listGroups and close", () =>
    withRuntime(async (runtime, store) => {
      expectRefused(await refusal(() => runtime.retryRun("r-1", { fromstep: 0 } as never)), "RetryRunOptions.fromstep", "fromStep", "fromStep");
      expectRefused(
        await refusal(() => runtime.listRuns({ limt: 5 } as never)),
        "listRuns.limt",
        "state, workflow, submittedAfter, submittedBefore, cursor, limit",
        "limit",
      );
      expectRefused(await refusal(() => runtime.listGroups({ cursr: "x" } as never)), "listGroups.cursr", "cursor, limit", "cursor");
      expectRefused(await refusal(() => runtime.close({ timeout: 5 } as never)), "close.timeout", "timeoutMs", "timeoutMs");
      expect(store.counts.puts).toBe(0);
      // The refused close closed nothing: the runtime still takes runs.
      await runtime.submit({ input: enc("x"), runId: "still-open" });
      await expect(runtime.listRuns({ limit: 5 })).resolves.toMatchObject({ runs: [{ runId: "still-open" }] });
    }));

  it("a group's submission: a member's field and the shared options", () =>
    withRuntime(async (runtime, store) => {
      const group = runtime.group("g-1");
      expectRefused(await refusal(() => group.submit([{ key: "a", input: enc("x"), imput: 1 } as never])), 'member "a".imput', "key, input", "input");
      expectRefused(
        await refusal(() => group.submit([{ key: "a", input: enc("x") }], { priorty: 1 } as RunOptions)),
        "the group's RunOptions.priorty",
        RUN_OPTIONS,
        "priority",
      );
      expect(store.counts.puts).toBe(0);
      expect((await runtime.listGroups()).groups).toEqual([]);
      await group.submit([{ key: "a", input: enc("x") }], { priority: 1 });
      expect((await runtime.listGroups()).groups).toHaveLength(1);
    }));

  it("a schedule: its own fields, its run's and the run's options, every problem at once", () =>
    withRuntime(async (runtime, store) => {
      const err = await refusal(() =>
        runtime.schedules.upsert({
          id: "nightly",
          cron: "0 2 * * *",
          jitterMS: 5,
          run: { input: enc("x"), option: {} },
        } as unknown as ScheduleSpec),
      );
      expect(err.message).toMatch(/^schedule "nightly" is not valid/);
      expect(err.issues).toEqual([
        "jitterMS is not an option (misspelt?); the options are id, cron, timezone, run, overlap, catchUp, jitterMs; did you mean jitterMs?",
        "run.option is not an option (misspelt?); the options are input, options; did you mean options?",
      ]);
      const nested = await refusal(() =>
        runtime.schedules.upsert({ id: "nightly", cron: "0 2 * * *", run: { input: enc("x"), options: { prority: 2 } as RunOptions } }),
      );
      expectRefused(nested, 'schedule "nightly": run.options.prority', RUN_OPTIONS, "priority");
      expect(store.counts.puts).toBe(0);
      expect(await runtime.schedules.list()).toEqual([]);
      await runtime.schedules.upsert({ id: "nightly", cron: "0 2 * * *", jitterMs: 5, run: { input: enc("x"), options: { priority: 2 } } });
      expect((await runtime.schedules.list()).map((s) => s.id)).toEqual(["nightly"]);
    }));
});

describe("a child's start refuses a field that is no option, before marking its parent", () => {
  it("in the spec and in its options; spelt right, the child starts", async () => {
    const refusals: unknown[] = [];
    const runner = runnerOf(async (s) => {
      if (dec(s.payload) === "child") return StepOutcome.succeed(enc("done"));
      for (const spec of [
        { input: enc("child"), parentclose: "abandon" },
        { input: enc("child"), options: { maxAttempts: 2 } },
      ]) {
        refusals.push(
          await s.children.start(spec as never).then(
            () => undefined,
            (e: unknown) => e,
          ),
        );
      }
      // Nothing of the refused starts was written: the one spelt right is the run's only child.
      const started = await s.children.start({ input: enc("child"), key: "ok", options: { maxAttemptsPerStep: 2 } });
      return StepOutcome.succeed(enc(String(started.runId)));
    });
    const env = await openEnv(runner);
    try {
      await env.runtime.submit({ runId: "p", input: enc("parent") });
      const end = await env.runtime.wait("p");
      expect(end.termination.status).toBe("succeeded");
      expect(dec(end.outcome?.result)).toBe("p-s0-ok");
      expectRefused(refusals[0] as ValidationError, "children.start.parentclose", "input, key, options, parentClose", "parentClose");
      expectRefused(refusals[1] as ValidationError, "children.start.options.maxAttempts", RUN_OPTIONS, undefined);
      expect((await env.runtime.listRuns()).runs.map((r) => String(r.runId)).sort()).toEqual(["p", "p-s0-ok"]);
    } finally {
      await env.stop();
    }
  });
});

describe("the client's and the cluster entries' options refuse a field that is no option, before any store request", () => {
  const untouched = (store: CountingStore) => expect(store.counts).toMatchObject({ gets: 0, puts: 0, lists: 0, deletes: 0 });

  it("TaqubaClient.open", async () => {
    const store = withCounting(new MemoryStore());
    const err = await refusal(() => TaqubaClient.open(store, { name: "app", queuName: "workflow-steps" } as never));
    expectRefused(err, "TaqubaClientOptions.queuName", "name, queueName, memoPrefix, timeoutMs, pollIntervalMs, clock", "queueName");
    untouched(store);
  });

  it("serveClients", () =>
    withRuntime(async (runtime, store, queue) => {
      const err = await refusal(() => serveClients(queue, runtime, { store, listIntervalMS: 10 } as never));
      expectRefused(err, "ServeClientsOptions.listIntervalMS", "store, listIntervalMs, appliedRetentionMs, maxConcurrentRequests, logger", "listIntervalMs");
      // A second serveClients over the same step queue would be refused as a second loop: the first was never started.
      const inbox = serveClients(queue, runtime, { store, listIntervalMs: 10 });
      await inbox.stop();
    }));

  it("runOwnerElection, runShardWorkers and readOwners", async () => {
    const store = withCounting(new MemoryStore());
    const start = async () => ({ stop: async () => undefined });
    const election = await refusal(() => runOwnerElection(store, "app", { start, leaseDurationMS: 1000 } as never));
    expectRefused(
      election,
      "OwnerElectionOptions.leaseDurationMS",
      "start, leaseDurationMs, renewIntervalMs, processId, clock, logger, onChange",
      "leaseDurationMs",
    );
    const shards = await refusal(() => runShardWorkers(store, "app", { start, renewIntervalMS: 100 } as never));
    expectRefused(
      shards,
      "ShardWorkersOptions.renewIntervalMS",
      "start, leaseDurationMs, renewIntervalMs, processId, clock, logger, onChange",
      "renewIntervalMs",
    );
    const owners = await refusal(() => readOwners(store, "app", { queuename: "workflow-steps" } as never));
    expectRefused(owners, "ReadOwnersOptions.queuename", "queueName, now", "queueName");
    untouched(store);
  });
});
