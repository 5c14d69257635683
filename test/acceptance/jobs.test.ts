/**
 * Acceptance: the "Jobs" section of the public API contract.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  JobRunner,
  MemoryStore,
  MockClock,
  Queue,
  ValidationError,
  createValidator,
  defineHeaders,
  defineJob,
  type JobContext,
  type JobHandle,
  type JobHandler,
  type JobOutcome,
  type ObjectStore,
  type RawValidateFunction,
} from "taquba";
import { until } from "./support.js";

/** A raw validation function from a predicate, as precompiled validators report. */
function rawCheck(check: (v: unknown) => string | null): RawValidateFunction {
  const fn = ((v: unknown): boolean => {
    const problem = check(v);
    fn.errors = problem === null ? null : [{ instancePath: "", keyword: "check", params: {}, message: problem }];
    return problem === null;
  }) as RawValidateFunction;
  return fn;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

type Headers = { tenant: string };
type Input = { n: number };
type Output = { doubled: number };
type Err = { reason: string };

const headers = defineHeaders<Headers>({
  package: "acc",
  names: ["tenant"],
  required: ["tenant"],
  validator: createValidator<Headers>(
    "acc headers",
    rawCheck((v) => (isRecord(v) && typeof v.tenant === "string" ? null : "needs a tenant")),
  ),
});

const doubleJob = defineJob({
  name: "acc.double",
  package: "acc",
  input: createValidator<Input>(
    "acc.double input",
    rawCheck((v) => (isRecord(v) && Number.isInteger(v.n) ? null : "n must be an integer")),
  ),
  output: createValidator<Output>(
    "acc.double output",
    rawCheck((v) => (isRecord(v) && typeof v.doubled === "number" ? null : "doubled must be a number")),
  ),
  error: createValidator<Err>(
    "acc.double error",
    rawCheck((v) => (isRecord(v) && typeof v.reason === "string" ? null : "reason must be a string")),
  ),
  headers,
  idempotencyKey: "double:{n}",
  contractHash: "0000000000000000",
});

class Double implements JobHandler<Input, Output, Err, Headers> {
  calls = 0;
  async run(input: Input, ctx: JobContext<Headers, Err>): Promise<Output> {
    this.calls++;
    if (input.n < 0) ctx.fail({ reason: `negative ${input.n} for ${ctx.headers.tenant}` });
    return { doubled: input.n * 2 };
  }
}

async function open(store: ObjectStore, clock: MockClock, handler = new Double()) {
  const queue = await Queue.open(store, "jobs-acc", { clock, flushIntervalMs: 1 });
  const runner = JobRunner.builder(queue, store).register(doubleJob, handler).build();
  return { queue, runner, handler };
}

describe("JobRunner", () => {
  it("builder(queue, store).register(def, handler).build(); submit(def, input, opts) → handle; result() waits, fetchResult() never does", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const { queue, runner, handler } = await open(store, clock);
    const handle = await runner.submit(doubleJob, { n: 21 }, { headers: { tenant: "acme" } });
    expectTypeOf(handle).toMatchTypeOf<JobHandle<Output, Err>>();
    expect(handle.newlySubmitted).toBe(true);
    expect(await handle.fetchResult()).toBeNull();
    const worker = runner.spawn();
    const outcome: JobOutcome<Output, Err> = await handle.result();
    expect(outcome).toEqual({ status: "succeeded", output: { doubled: 42 } });
    expect(await handle.fetchResult()).toEqual(outcome);

    // The idempotency key collapses a duplicate, even after the job ended.
    const dup = await runner.submit(doubleJob, { n: 21 }, { headers: { tenant: "acme" } });
    expect(dup.jobId).toBe(handle.jobId);
    expect(dup.newlySubmitted).toBe(false);
    expect(handler.calls).toBe(1);

    // A typed failure through ctx.fail.
    const failed = await (await runner.submit(doubleJob, { n: -1 }, { headers: { tenant: "acme" } })).result();
    expect(failed).toMatchObject({ status: "failed", error: { reason: "negative -1 for acme" } });

    // Invalid input or headers: ValidationError, nothing enqueued.
    await expect(runner.submit(doubleJob, { n: 1.5 }, { headers: { tenant: "acme" } })).rejects.toBeInstanceOf(ValidationError);
    await expect(runner.submit(doubleJob, { n: 1 }, { headers: {} as Headers })).rejects.toBeInstanceOf(ValidationError);

    await worker.shutdown();
    await queue.close();

    // After a restart: a fresh runner over the same store reads the result.
    const again = await open(store, clock);
    const same = await again.runner.submit(doubleJob, { n: 21 }, { headers: { tenant: "acme" } });
    expect(same.newlySubmitted).toBe(false);
    expect(await same.fetchResult()).toEqual({ status: "succeeded", output: { doubled: 42 } });
    await again.queue.close();
  });

  it("runner.group(id, definition) and runner.group(id) → JobGroup: submit(jobs), results(), join(), status(), resume(), cancel(), forget()", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const { queue, runner } = await open(store, clock);
    const worker = runner.spawn();
    const group = runner.group("batch", doubleJob);
    const sub = await group.submit([{ n: 1 }, { n: 2 }, { n: -3 }], { headers: { tenant: "acme" } });
    expect(sub.submitted).toBe(3);
    const joined = await group.join();
    expect(joined.map((r) => r.outcome.status)).toEqual(["succeeded", "succeeded", "failed"]);
    expect(joined[1]!.outcome).toEqual({ status: "succeeded", output: { doubled: 4 } });
    const streamed: string[] = [];
    for await (const r of group.results()) streamed.push(r.key);
    expect(streamed.sort()).toEqual(joined.map((r) => r.key).sort());
    expect(await group.status()).toMatchObject({ succeeded: 2, failed: 1, pending: 0, running: 0 });
    expect(await group.cancel()).toBe(0);
    const resumed = await group.resume();
    expect(resumed.submitted).toBe(1);
    await until(
      async () => (await group.status())?.failed === 1 && (await group.status())?.running === 0 && (await group.status())?.pending === 0,
      "the rerun ended",
    );
    // runner.group(id), as the contract writes it: the same group, untyped; it reports, counts and forgets.
    const byId = runner.group("batch");
    expect(await byId.status()).toEqual(await group.status());
    expect((await byId.join()).map((r) => r.outcome.status)).toEqual(["succeeded", "succeeded", "failed"]);
    await expect(byId.submit([{ n: 9 }])).rejects.toBeInstanceOf(ValidationError);
    expect(await byId.forget()).toBe(true);
    expect(await group.status()).toBeNull();
    await worker.shutdown();
    await queue.close();
  });
});
