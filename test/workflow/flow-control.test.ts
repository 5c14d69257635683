/**
 * @module Flow control of runs: a runner's flow rules are defined on the
 * step queue when the runtime is built, every step of a run (not only the
 * first) and a redriven step carry the run's rule and keys, and the run
 * listing and inspection say why a held run waits.
 */
import { describe, expect, it } from "vitest";
import { pathToFileURL } from "node:url";
import {
  FLOW_CONCURRENCY_KEY_HEADER,
  FLOW_RULE_HEADER,
  LocalStore,
  MemoryStore,
  MockClock,
  QueueReader,
  StepError,
  StepOutcome,
  TaqubaClient,
  ValidationError,
  type RunnerHandle,
  type StepRunner,
} from "taquba";
import { main } from "../../operator/cli/main.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { FLOW_CONCURRENCY_LIMIT_HEADER } from "../../runtime/queue/admission.js";
import { decodeIndexEntry, encodeIndexEntry } from "../../runtime/workflow/runs/run-index.js";
import { dec, enc, openEnv, until } from "./helpers.js";

const tempDir = useTempDirs("taquba-flow-readers-");
const YEAR = 31_536_000_000;

/**
 * Two steps per run; step 1 waits for its run's gate, then succeeds or fails
 * as the gate says. `openAll` opens every gate, also those reached later, so
 * a test that failed midway still lets its worker stop.
 */
function gatedRunner() {
  const gates = new Map<string, (fail: boolean) => void>();
  const running = new Map<string, number>();
  let peak = 0;
  let allOpen = false;
  const runner: StepRunner = {
    flowRules: () => ({ reports: { concurrency: { limit: 1 } } }),
    async runStep(step) {
      const tenant = step.headers["tenant"] ?? "";
      const n = (running.get(tenant) ?? 0) + 1;
      running.set(tenant, n);
      if (tenant === "acme") peak = Math.max(peak, n);
      try {
        if (step.stepNumber === 0) return StepOutcome.continueNow(step.payload);
        const fail = allOpen ? false : await new Promise<boolean>((resolve) => gates.set(dec(step.payload), resolve));
        if (fail) throw StepError.permanent("report failed");
        return StepOutcome.succeed(step.payload);
      } finally {
        running.set(tenant, running.get(tenant)! - 1);
      }
    },
  };
  const openAll = () => {
    allOpen = true;
    for (const open of gates.values()) open(false);
  };
  return { runner, gates, peak: () => peak, openAll };
}

/**
 * Under the "reports" rule's limit of 1: run a1 fails at its second step,
 * then c1 is submitted with the worker stopped (its first step pending with
 * the limit header "1"); the queue is closed, ready for a restart.
 */
async function failedRunAndPendingRunUnderLimitOne(g: ReturnType<typeof gatedRunner>, runner: StepRunner): Promise<{ store: MemoryStore; clock: MockClock }> {
  const store = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  const first = await openEnv(runner, { store, clock });
  await first.runtime.submit({ runId: "a1", input: enc("a1"), options: REPORTS_FLOW });
  await until(() => g.gates.has("a1"), "a1 at its second step");
  g.gates.get("a1")!(true);
  expect((await first.runtime.wait("a1")).termination.status).toBe("failed");
  await first.worker?.shutdown();
  // Submitted while the limit was 1; its first step runs after the restart.
  await first.runtime.submit({ runId: "c1", input: enc("c1"), options: REPORTS_FLOW });
  expect((await first.queue.view().listJobs("workflow-steps", "pending")).items.map((j) => j.headers[FLOW_CONCURRENCY_LIMIT_HEADER])).toEqual(["1"]);
  await first.queue.close();
  return { store, clock };
}

const REPORTS_FLOW = { headers: { tenant: "acme" }, flow: { rule: "reports", concurrencyKey: "acme" } };

describe("flow control of runs", () => {
  it("holds a key's runs to its limit across steps, lets other keys pass, says why in listings, and keeps the limit on a redrive", async () => {
    const g = gatedRunner();
    const env = await openEnv(g.runner);
    const submit = (name: string, tenant: string) =>
      env.runtime.submit({ runId: name, input: enc(name), options: { headers: { tenant }, flow: { rule: "reports", concurrencyKey: tenant } } });
    await submit("a1", "acme");
    await submit("a2", "acme");
    await submit("g1", "globex");
    // a1 is on its second step, holding acme's one slot; a2 waits even for its first step; globex passes.
    await until(() => g.gates.has("a1") && g.gates.has("g1"), "a1 and g1 at their second steps");
    const a2 = (await env.runtime.listRuns({})).runs.find((r) => r.runId === "a2");
    expect(a2?.state).toBe("pending");
    expect(a2?.heldBy).toEqual({ reason: "concurrency", key: "acme", limit: 1, held: 1, rule: "reports" });
    const inspected = await env.runtime.inspectRun("a2");
    expect(inspected?.steps.at(-1)?.heldBy).toMatchObject({ reason: "concurrency", key: "acme" });
    expect(g.gates.has("a2")).toBe(false);
    g.gates.get("a1")!(true);
    g.gates.get("g1")!(false);
    await until(() => g.gates.has("a2"), "a2 at its second step once a1 ended");
    g.gates.get("a2")!(false);
    await env.runtime.wait("a2");
    expect((await env.runtime.wait("a1")).termination.status).toBe("failed");

    // The redriven step carries the run's rule and key, so the limit holds for it too.
    g.gates.clear();
    const retried = await env.runtime.retryRun("a1");
    const job = await env.queue.view().job(retried.jobId);
    expect(job?.headers[FLOW_RULE_HEADER]).toBe("reports");
    expect(job?.headers[FLOW_CONCURRENCY_KEY_HEADER]).toBe("acme");
    await until(() => g.gates.has("a1"), "the redriven step");
    g.gates.get("a1")!(false);
    expect((await env.runtime.wait("a1")).termination.status).toBe("succeeded");
    expect(g.peak()).toBe(1);
    await env.stop();
  });

  it("keeps the run's rule and key on a redrive that starts its steps again, so a key's other run still holds them back", async () => {
    const g = gatedRunner();
    const env = await openEnv(g.runner);
    const submit = (name: string) =>
      env.runtime.submit({ runId: name, input: enc(name), options: { headers: { tenant: "acme" }, flow: { rule: "reports", concurrencyKey: "acme" } } });
    await submit("a1");
    await until(() => g.gates.has("a1"), "a1 at its second step");
    g.gates.get("a1")!(true);
    expect((await env.runtime.wait("a1")).termination.status).toBe("failed");
    await submit("a2");
    await until(() => g.gates.has("a2"), "a2 at its second step, holding acme's one slot");

    // From step 0 the redrive enqueues a new job from the run's index entry, not the dead one.
    g.gates.delete("a1");
    const retried = await env.runtime.retryRun("a1", { fromStep: 0 });
    const job = await env.queue.view().job(retried.jobId);
    expect(job?.headers[FLOW_RULE_HEADER]).toBe("reports");
    expect(job?.headers[FLOW_CONCURRENCY_KEY_HEADER]).toBe("acme");
    const a1 = (await env.runtime.listRuns({})).runs.find((r) => r.runId === "a1");
    expect(a1?.heldBy).toEqual({ reason: "concurrency", key: "acme", limit: 1, held: 1, rule: "reports" });
    g.gates.get("a2")!(false);
    expect((await env.runtime.wait("a2")).termination.status).toBe("succeeded");
    await until(() => g.gates.has("a1"), "the redriven run at its second step once a2 ended");
    g.gates.get("a1")!(false);
    expect((await env.runtime.wait("a1")).termination.status).toBe("succeeded");
    expect(g.peak()).toBe(1);
    await env.stop();
  });

  it("redrives a run whose index entry an earlier version wrote (no flow field) as that version did: without flow headers", async () => {
    const g = gatedRunner();
    const env = await openEnv(g.runner);
    await env.runtime.submit({ runId: "old", input: enc("old"), options: { headers: { tenant: "acme" }, flow: { rule: "reports", concurrencyKey: "acme" } } });
    await until(() => g.gates.has("old"), "old at its second step");
    g.gates.get("old")!(true);
    expect((await env.runtime.wait("old")).termination.status).toBe("failed");
    const entries = (await env.queue.kvScan("workflow/run-index/")).entries;
    expect(entries.length).toBe(1);
    const { flow, ...earlier } = decodeIndexEntry(entries[0]!.value, entries[0]!.key);
    expect(flow?.[FLOW_RULE_HEADER]).toBe("reports");
    await env.queue.kvPut(entries[0]!.key, encodeIndexEntry(earlier));

    g.gates.delete("old");
    await env.runtime.retryRun("old", { fromStep: 0 });
    // The redriven step 0 runs at once (nothing holds it) and may be gone before a read of its job:
    // read its headers on the step it continued to, which carries them (the flow headers as they are).
    await until(() => g.gates.has("old"), "the redriven run at its second step");
    const claimed = (await env.queue.view().listJobs("workflow-steps", "claimed")).items;
    expect(claimed.length).toBe(1);
    expect(claimed[0]!.headers[FLOW_RULE_HEADER]).toBeUndefined();
    expect(claimed[0]!.headers["tenant"]).toBe("acme");
    g.gates.get("old")!(false);
    expect((await env.runtime.wait("old")).termination.status).toBe("succeeded");
    await env.stop();
  });

  it("a redriven step and a step continued after a restart carry the rule's limit of now, not the one at submission, for readers elsewhere", async () => {
    const g = gatedRunner();
    let limit = 1;
    const runner: StepRunner = { ...g.runner, flowRules: () => ({ reports: { concurrency: { limit } } }) };
    const { store, clock } = await failedRunAndPendingRunUnderLimitOne(g, runner);

    // Restarted with the rule's limit raised to 2.
    limit = 2;
    g.gates.delete("a1");
    const env = await openEnv(runner, { store, clock, start: false });
    let worker: RunnerHandle | undefined;
    try {
      const retried = await env.runtime.retryRun("a1", { fromStep: 0 });
      // Read before a worker runs: one would claim the step, run it and continue the run (its job gone) without giving up the thread.
      expect((await env.queue.view().job(retried.jobId))?.headers[FLOW_CONCURRENCY_LIMIT_HEADER]).toBe("2");
      worker = env.runtime.spawn();
      await until(() => g.gates.has("a1") && g.gates.has("c1"), "both runs at their second step (the limit of 2 admits both)");
      const claimed = (await env.queue.view().listJobs("workflow-steps", "claimed")).items;
      expect(claimed.map((j) => j.headers[FLOW_CONCURRENCY_LIMIT_HEADER])).toEqual(["2", "2"]);
      g.gates.get("a1")!(false);
      g.gates.get("c1")!(false);
      expect((await env.runtime.wait("a1")).termination.status).toBe("succeeded");
      expect((await env.runtime.wait("c1")).termination.status).toBe("succeeded");
    } finally {
      // A failed expectation leaves steps at their gates, or on their way there: let them end, so the worker stops.
      g.openAll();
      await worker?.shutdown();
      await env.stop();
    }
  });

  it("a rule that lost its concurrency limit: continued and redriven steps drop the limit header, so a reader elsewhere names no full key", async () => {
    const g = gatedRunner();
    let rules: Record<string, { concurrency?: { limit: number } }> = { reports: { concurrency: { limit: 1 } } };
    const runner: StepRunner = { ...g.runner, flowRules: () => rules };
    const { store, clock } = await failedRunAndPendingRunUnderLimitOne(g, runner);

    // Restarted with the rule redefined without a limit; one step at a time, so a redriven step waits for the worker.
    rules = { reports: {} };
    g.gates.delete("a1");
    const env = await openEnv(runner, { store, clock, configure: (b) => b.maxConcurrentSteps(1) });
    try {
      await until(() => g.gates.has("c1"), "c1 at its second step");
      const claimed = (await env.queue.view().listJobs("workflow-steps", "claimed")).items;
      expect(claimed.map((j) => [j.headers[FLOW_RULE_HEADER], Object.hasOwn(j.headers, FLOW_CONCURRENCY_LIMIT_HEADER)])).toEqual([["reports", false]]);
      const retried = await env.runtime.retryRun("a1", { fromStep: 0 });
      const pending = await env.queue.view().job(retried.jobId);
      expect(pending?.state).toBe("pending");
      expect(pending?.headers).not.toHaveProperty(FLOW_CONCURRENCY_LIMIT_HEADER);
      // c1 holds "acme" once: by the dropped limit of 1 the key would read as full.
      await env.queue.flush();
      const reader = await QueueReader.open(store, "wf");
      expect((await reader.job(retried.jobId))?.waiting).toBeUndefined();
      g.gates.get("c1")!(false);
      await until(() => g.gates.has("a1"), "a1 at its second step");
      g.gates.get("a1")!(false);
      expect((await env.runtime.wait("a1")).termination.status).toBe("succeeded");
      expect((await env.runtime.wait("c1")).termination.status).toBe("succeeded");
    } finally {
      // A failed expectation leaves steps at their gates, or on their way there: let them end, so the worker stops.
      g.openAll();
      await env.stop();
    }
  });

  it("shows a run held by a full concurrency key to readers in other processes: a QueueReader, a TaqubaClient, the CLI", async () => {
    const g = gatedRunner();
    const dir = await tempDir();
    const env = await openEnv(g.runner, { store: new LocalStore(dir) });
    const submit = (name: string) =>
      env.runtime.submit({ runId: name, input: enc(name), options: { headers: { tenant: "acme" }, flow: { rule: "reports", concurrencyKey: "acme" } } });
    await submit("a1");
    await submit("a2");
    // One run reaches its second step and holds acme's one slot; the other waits.
    await until(() => g.gates.size === 1, "one run at its second step");
    const [running] = [...g.gates.keys()];
    const waiting = running === "a1" ? "a2" : "a1";
    const held = { reason: "concurrency", key: "acme", limit: 1, held: 1, rule: "reports" };
    await env.queue.flush();

    const reader = await QueueReader.open(new LocalStore(dir), "wf");
    const pendingOf = async () => (await reader.listJobs("workflow-steps", "pending")).items.find((j) => j.headers["workflow.run_id"] === waiting);
    expect((await pendingOf())?.waiting).toEqual(held);
    const client = await TaqubaClient.open(new LocalStore(dir), { name: "wf", queueName: "workflow-steps" });
    try {
      expect((await client.listRuns()).runs.find((r) => r.runId === waiting)?.heldBy).toEqual(held);
      expect((await client.inspectRun(waiting))?.steps.at(-1)?.heldBy).toEqual(held);
    } finally {
      await client.close();
    }
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: () => undefined, color: false };
    expect(await main(["runs", "show", pathToFileURL(dir).href, waiting, "--name", "wf", "--step-queue", "workflow-steps"], io)).toBe(0);
    expect(out.join("\n")).toMatch(/held by\s+concurrency limit of reports for key "acme" \(1 of 1 running\)/);

    // Once the slot is free the reader, refreshed, no longer names a reason.
    g.gates.get(running!)!(false);
    await until(() => g.gates.has(waiting), "the other run at its second step");
    await env.queue.flush();
    await reader.refresh();
    expect(await pendingOf()).toBeUndefined();
    expect((await reader.listJobs("workflow-steps", "claimed")).items.find((j) => j.headers["workflow.run_id"] === waiting)?.waiting).toBeUndefined();
    g.gates.get(waiting)!(false);
    await env.runtime.wait(waiting);
    await env.stop();
  });

  it("shows a run held by its rule's rate limit, with its end, to a QueueReader, a TaqubaClient and the CLI", async () => {
    // A period of a year on a clock near the real time, so the CLI (on the system clock) sees the window open.
    const clock = new MockClock(Date.now());
    const runner: StepRunner = {
      flowRules: () => ({ paced: { rateLimit: { limit: 1, periodMs: YEAR } } }),
      runStep: async (step) => StepOutcome.succeed(step.payload),
    };
    const dir = await tempDir();
    const env = await openEnv(runner, { store: new LocalStore(dir), clock });
    const t0 = clock.now();
    const submit = (name: string) => env.runtime.submit({ runId: name, input: enc(name), options: { flow: { rule: "paced", rateKey: "acme" } } });
    await submit("p1");
    await submit("p2");
    const [first] = await Promise.race([env.runtime.wait("p1").then(() => ["p1"]), env.runtime.wait("p2").then(() => ["p2"])]);
    const waiting = first === "p1" ? "p2" : "p1";
    const held = { reason: "rate_limit", key: "acme", limit: 1, periodMs: YEAR, until: t0 + YEAR, rule: "paced" };
    await until(
      async () => (await env.runtime.listRuns({})).runs.find((r) => r.runId === waiting)?.heldBy?.reason === "rate_limit",
      "the owner names the rate limit",
    );
    await env.queue.flush();

    const reader = await QueueReader.open(new LocalStore(dir), "wf", { clock });
    expect((await reader.listJobs("workflow-steps", "pending")).items.find((j) => j.headers["workflow.run_id"] === waiting)?.waiting).toEqual(held);
    const client = await TaqubaClient.open(new LocalStore(dir), { name: "wf", queueName: "workflow-steps", clock });
    try {
      expect((await client.listRuns()).runs.find((r) => r.runId === waiting)?.heldBy).toEqual(held);
      expect((await client.inspectRun(waiting))?.steps.at(-1)?.heldBy).toEqual(held);
    } finally {
      await client.close();
    }
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: () => undefined, color: false };
    expect(await main(["runs", "show", pathToFileURL(dir).href, waiting, "--name", "wf", "--step-queue", "workflow-steps"], io)).toBe(0);
    expect(out.join("\n")).toMatch(/held by\s+rate limit of paced for key "acme" \(1 per 31536000000 ms\) until /);
    // Once the window passed, the reader names no reason.
    clock.advance(YEAR);
    expect((await reader.listJobs("workflow-steps", "pending")).items.find((j) => j.headers["workflow.run_id"] === waiting)?.waiting).toBeUndefined();
    await reader.close();
    await env.runtime.wait(waiting);
    await env.stop();
  });

  it("refuses a malformed flow before writing anything", async () => {
    const env = await openEnv({ runStep: async (s) => StepOutcome.succeed(s.payload) }, { start: false });
    for (const flow of [{ rule: "" }, { rule: "r", concurrencyKey: 7 }, null]) {
      await expect(env.runtime.submit({ runId: "x", input: enc("x"), options: { flow: flow as never } }), JSON.stringify(flow)).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
    expect(await env.runtime.status("x")).toBeNull();
    await env.stop();
  });
});
