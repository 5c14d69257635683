/**
 * @module Flow control of typed jobs: the keys a definition builds from a
 * submission's headers and input, the flow rule its runner defines on the
 * step queue, and the refusals (a missing key value; a job group keyed by
 * input fields).
 */
import { describe, expect, it } from "vitest";
import { defineJob, FLOW_CONCURRENCY_KEY_HEADER, FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, JobRunner, MemoryStore, Queue, ValidationError } from "taquba";
import { emailJob, tenantLimitedJob, testHeaders, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";

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

const TENANT_FLOW = { [FLOW_RULE_HEADER]: "test.email.tenant", [FLOW_CONCURRENCY_KEY_HEADER]: "acme", [FLOW_RATE_KEY_HEADER]: "acme" };

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

  it("a job group's members obey their definition's flow rule, on submit and on resume", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "jobs", { flushIntervalMs: 0 });
    const ran: string[] = [];
    let running = 0;
    let most = 0;
    const runner = JobRunner.builder(queue, store)
      .concurrency(4)
      .register(tenantLimitedJob, {
        async run(input, ctx) {
          running++;
          most = Math.max(most, running);
          await new Promise((r) => setTimeout(r, 5));
          running--;
          ran.push(input.to);
          if (input.to.startsWith("blocked@")) ctx.fail({ reason: "blocked" });
          return { message_id: input.to };
        },
      })
      .build();
    const group = runner.group("tenant-mail", tenantLimitedJob);
    const inputs = [{ to: "a@x.io" }, { to: "blocked@x.io" }, { to: "c@x.io" }, { to: "d@x.io" }];
    await group.submit(inputs, { headers: { tenant_id: "acme" } });
    const pending = (await queue.view().listJobs(runner.runtime.queueName, "pending")).items;
    expect(pending).toHaveLength(4);
    for (const job of pending) expect(job.headers).toMatchObject(TENANT_FLOW);
    // A missing key value is refused before anything is written.
    await expect(runner.group("other", tenantLimitedJob).submit([{ to: "a@x.io" }], { headers: {} })).rejects.toBeInstanceOf(ValidationError);
    expect(await runner.group("other", tenantLimitedJob).status()).toBeNull();

    const worker = runner.spawn();
    expect((await group.join()).map((r) => r.outcome.status)).toEqual(["succeeded", "failed", "succeeded", "succeeded"]);
    expect(most, "one tenant's jobs ran one at a time").toBe(1);
    await worker.shutdown();
    // Resume runs the failed member again from the manifest, with the same flow rule and keys.
    expect((await group.resume()).submitted).toBe(1);
    const again = (await queue.view().listJobs(runner.runtime.queueName, "pending")).items;
    expect(again).toHaveLength(1);
    expect(again[0]!.headers).toMatchObject(TENANT_FLOW);
    await runner.close();
  });
});
