/**
 * @module Flow control of typed jobs: the keys a definition builds from a
 * submission's headers and input, the flow rule its runner defines on the
 * step queue, and the refusals (a missing key value; a job group keyed by
 * input fields).
 */
import { describe, expect, it } from "vitest";
import { defineJob, FLOW_CONCURRENCY_KEY_HEADER, FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, JobRunner, MemoryStore, Queue, ValidationError } from "taquba";
import { emailJob, testHeaders, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";

const limitedJob = defineJob<"test.email.limited", EmailInput, EmailOutput, EmailError, TestHeaders>({
  name: "test.email.limited",
  package: "test",
  input: emailJob.input,
  output: emailJob.output,
  error: emailJob.error!,
  headers: testHeaders,
  contractHash: "test-email-limited",
  flowControl: { concurrency: { limit: 1, key: "{tenant_id}" }, rateLimit: { limit: 5, periodMs: 1000, key: "{tenant_id}/{to}" } },
});

describe("flow control of typed jobs", () => {
  it("builds the keys from headers and input, and puts the rule and keys on the job's step", async () => {
    expect(limitedJob.flowControl?.flowOf({ to: "a@b.c" }, { tenant_id: "acme" })).toEqual({
      rule: "test.email.limited",
      concurrencyKey: "acme",
      rateKey: "acme/a%40b.c",
    });
    expect(limitedJob.flowControl?.readsInput).toBe(true);
    expect(() => limitedJob.flowControl?.flowOf({ to: "a@b.c" }, {})).toThrow(ValidationError);

    const store = new MemoryStore();
    const queue = await Queue.open(store, "jobs", { flushIntervalMs: 0 });
    const runner = JobRunner.builder(queue, store)
      .register(limitedJob, { run: async (input) => ({ message_id: input.to }) })
      .build();
    const handle = await runner.submit(limitedJob, { to: "a@b.c" }, { headers: { tenant_id: "acme" } });
    const pending = (await queue.view().listJobs(runner.runtime.queueName, "pending")).items;
    expect(pending).toHaveLength(1);
    expect(pending[0]!.headers).toMatchObject({
      [FLOW_RULE_HEADER]: "test.email.limited",
      [FLOW_CONCURRENCY_KEY_HEADER]: "acme",
      [FLOW_RATE_KEY_HEADER]: "acme/a%40b.c",
    });
    // A missing key value is refused at submit, before anything is written.
    await expect(runner.submit(limitedJob, { to: "x@y.z" }, { headers: {} })).rejects.toBeInstanceOf(ValidationError);
    // A group shares one set of options among its members, so it cannot key by their inputs.
    await expect(runner.group("g", limitedJob).submit([{ to: "a@b.c" }], { headers: { tenant_id: "acme" } })).rejects.toThrow(/input fields/);
    expect((await queue.view().stats(runner.runtime.queueName)).pending).toBe(1);

    const worker = runner.spawn();
    expect(await handle.output()).toEqual({ message_id: "a@b.c" });
    await worker.shutdown();
    await runner.close();
  });
});
