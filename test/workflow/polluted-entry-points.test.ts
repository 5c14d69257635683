/**
 * @module Public entry points with a polluted `Object.prototype` (see
 * test/foundation/polluted-prototype.test.ts for each reader): an enqueue,
 * a batch, a submission, a client's submission and a run group's take no
 * option from it. The prototype is polluted only while the call reads its
 * arguments (synchronously, before its first await) and restored in
 * `finally`, so the queue's own work runs on a clean one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, serveClients, StepOutcome, TaqubaClient, WorkflowRuntime } from "taquba";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const POLLUTION = { priority: 9, headers: { tenant: "evil" }, maxAttemptsPerStep: 9, maxAttempts: 9, opts: { priority: 9 } };

/** Starts `call` with `POLLUTION` on `Object.prototype`, removed again before anything else runs; its promise. */
function callPolluted<T>(call: () => Promise<T>): Promise<T> {
  const proto = Object.prototype as Record<string, unknown>;
  for (const [k, v] of Object.entries(POLLUTION)) proto[k] = v;
  try {
    return call();
  } finally {
    for (const k of Object.keys(POLLUTION)) delete proto[k];
  }
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe("entry points under a polluted Object.prototype", () => {
  it("enqueue and enqueueBatch: the jobs keep the queue's defaults and no headers", async () => {
    const queue = await Queue.open(new MemoryStore(), "app");
    stops.push(() => queue.close());
    const one = await callPolluted(() => queue.enqueue("jobs", enc("a")));
    const [two] = await callPolluted(() => queue.enqueueBatch([{ queueName: "jobs", payload: enc("b") }]));
    for (const { jobId } of [one, two!]) {
      const job = await queue.view().job(jobId);
      expect(job).toMatchObject({ priority: 1000, maxAttempts: 3 });
      expect(job?.headers ?? {}).toEqual({});
    }
  });

  it("a run's submission: its steps carry no header", async () => {
    const seen: Readonly<Record<string, string>>[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        seen.push({ ...s.headers });
        return StepOutcome.succeed(enc("done"));
      }),
    );
    stops.push(() => env.stop());
    await callPolluted(() => env.runtime.submit({ runId: "r", input: enc("x") }));
    expect((await env.runtime.wait("r")).outcome?.headers).toEqual({});
    expect(seen).toEqual([{}]);
  });

  it("a client's submission and a run group's: no header reaches the runs", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, STORE_NAME, { flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    const worker = runtime.spawn();
    const inbox = serveClients(queue, runtime, { store, listIntervalMs: 10 });
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, pollIntervalMs: 200 });
    stops.push(async () => {
      await client.close();
      await inbox.stop();
      await worker.shutdown();
      await queue.close();
    });
    const { runId } = await callPolluted(() => client.submit({ runId: "c", input: enc("{}") }));
    const byClient = await runtime.wait(runId);
    expect(byClient.outcome?.headers).toEqual({});
    await callPolluted(() => runtime.group("g").submit([{ key: "a", input: enc("{}") }]));
    const member = await runtime.wait(runtime.group("g").runIdOf("a"));
    expect(member.outcome?.headers).toEqual({});
  });
});

describe("a run under reserved header names set on Object.prototype", () => {
  // Non-enumerable, as a polluting library would most likely set them: no `for...in` sees them, only a lookup by name.
  const RESERVED = [
    "workflow.terminal",
    "workflow.noop",
    "workflow.signal_wait",
    "workflow.child_ended",
    "workflow.parent_ended",
    "workflow.parent_submission",
    "workflow.parent_status",
  ];
  afterEach(() => {
    for (const name of RESERVED) delete (Object.prototype as Record<string, unknown>)[name];
  });

  it("runs every step and ends with its output: a job's reserved headers are its own only", async () => {
    const steps: number[] = [];
    const env = await openEnv(
      runnerOf(async (s) => {
        steps.push(s.stepNumber);
        return s.stepNumber < 2 ? StepOutcome.continueNow(enc(`step ${s.stepNumber}`)) : StepOutcome.succeed(enc("done"));
      }),
    );
    stops.push(() => env.stop());
    for (const name of RESERVED) Object.defineProperty(Object.prototype, name, { value: "1", configurable: true, writable: true });
    await env.runtime.submit({ runId: "r", input: enc("x") });
    // Its own bound, well under the test's: a step taken for a no-op is acked without running, and the run never ends.
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`run r did not end in 15 s; steps run: ${steps.join(", ")}`)), 15_000);
    });
    const ended = await Promise.race([env.runtime.wait("r"), stuck]).finally(() => clearTimeout(timer));
    expect(ended.outcome?.status).toBe("succeeded");
    expect(steps).toEqual([0, 1, 2]);
  });
});
