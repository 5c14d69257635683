/**
 * @module Job groups: typed results in submission order, idempotent
 * resubmission, streaming results, resume, cancel and forget, retention and
 * invalid items.
 */
import { describe, expect, it } from "vitest";
import { GroupActiveError, InputMismatchError, MemoryStore, ValidationError, type JobHandler } from "taquba";
import { addJob, emailJob, keyedEmailJob, openJobEnv, type EmailError, type EmailInput, type EmailOutput, type TestHeaders } from "./fixtures.js";

/** Fails with a typed error for "blocked@…"; fails transiently for "down@…" while `down.value` holds. */
function handler(calls: string[], down = { value: true }): JobHandler<EmailInput, EmailOutput, EmailError, TestHeaders> {
  return {
    async run(input, ctx) {
      calls.push(input.to);
      if (input.to.startsWith("blocked@")) ctx.fail({ reason: "blocked" });
      if (input.to.startsWith("down@") && down.value) throw new Error("smtp down");
      return { message_id: `m-${input.to}` };
    },
  };
}

describe("job groups", () => {
  it("join returns typed results in submission order; members are keyed item-{i}", async () => {
    const calls: string[] = [];
    const env = await openJobEnv((b) => b.register(emailJob, handler(calls)).register(addJob, { run: async (i) => i.a + i.b }));
    const group = env.runner.group("mail-1", emailJob);
    const out = await group.submit([{ to: "c@x.io" }, { to: "blocked@x.io" }, { to: "a@x.io" }], { headers: { tenant_id: "t" } });
    expect(out.members.map((m) => m.key)).toEqual(["item-0", "item-1", "item-2"]);
    const joined = await group.join();
    expect(joined.map((r) => r.key)).toEqual(["item-0", "item-1", "item-2"]);
    expect(joined[0]!.outcome).toEqual({ status: "succeeded", output: { message_id: "m-c@x.io" } });
    expect(joined[1]!.outcome).toMatchObject({ status: "failed", error: { reason: "blocked" } });
    expect(joined[1]!.kind).toBe("runner");
    expect(await group.status()).toMatchObject({ total: 3, succeeded: 2, failed: 1 });
    // A member's handle reads the same result.
    expect(await group.handle("item-2").output()).toEqual({ message_id: "m-a@x.io" });
    // Typed per definition: an add group yields numbers.
    const sums = env.runner.group("sums", addJob);
    await sums.submit([
      { a: 1, b: 2 },
      { a: 3, b: 4 },
    ]);
    expect((await sums.join()).map((r) => (r.outcome.status === "succeeded" ? r.outcome.output : null))).toEqual([3, 7]);
    await env.stop();
  });

  it("keys members by the definition's idempotency key and resubmits idempotently", async () => {
    const calls: string[] = [];
    const env = await openJobEnv((b) => b.register(keyedEmailJob, handler(calls)));
    const group = env.runner.group("keyed", keyedEmailJob);
    const first = await group.submit([{ to: "a@x.io" }, { to: "b@x.io" }]);
    expect(first.members.map((m) => m.key)).toEqual(["mail:a%40x.io", "mail:b%40x.io"]);
    await group.join();
    const again = await group.submit([{ to: "a@x.io" }, { to: "b@x.io" }]);
    expect(again.submitted).toBe(0);
    await expect(group.submit([{ to: "a@x.io", subject: "changed" }])).rejects.toBeInstanceOf(InputMismatchError);
    expect(calls.sort()).toEqual(["a@x.io", "b@x.io"]);
    await env.stop();
  });

  it("results stream as jobs end; resume after a restart reruns only jobs that did not succeed", async () => {
    const store = new MemoryStore();
    const calls: string[] = [];
    const down = { value: true };
    const first = await openJobEnv((b) => b.register(emailJob, handler(calls, down)), { store });
    const group = first.runner.group("batch", emailJob);
    await group.submit([{ to: "ok@x.io" }, { to: "down@x.io" }], { maxAttempts: 1 });
    const streamed: string[] = [];
    for await (const r of group.results()) streamed.push(`${r.key}:${r.outcome.status}`);
    expect(streamed.sort()).toEqual(["item-0:succeeded", "item-1:failed"]);
    await first.stop();

    down.value = false;
    const second = await openJobEnv((b) => b.register(emailJob, handler(calls, down)), { store });
    // Named by id alone, the group follows up on what exists; submitting needs the definition.
    const untyped = second.runner.group("batch");
    expect(await untyped.status()).toMatchObject({ succeeded: 1, failed: 1 });
    await expect(untyped.submit([{ to: "new@x.io" }])).rejects.toBeInstanceOf(ValidationError);
    const g2 = second.runner.group("batch", emailJob);
    expect((await g2.resume()).submitted).toBe(1);
    const joined = await g2.join();
    expect(joined.map((r) => r.outcome.status)).toEqual(["succeeded", "succeeded"]);
    expect((await untyped.join()).map((r) => [r.key, r.outcome])).toEqual([
      ["item-0", { status: "succeeded", output: { message_id: "m-ok@x.io" } }],
      ["item-1", { status: "succeeded", output: { message_id: "m-down@x.io" } }],
    ]);
    expect(calls.filter((c) => c === "ok@x.io")).toHaveLength(1);
    expect(calls.filter((c) => c === "down@x.io")).toHaveLength(2);
    await second.stop();
  });

  it("cancel, then forget removes the jobs' results with the group", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, handler([])), { start: false });
    const group = env.runner.group("cancel-me", emailJob);
    await group.submit([{ to: "a@x.io" }, { to: "b@x.io" }]);
    await expect(group.forget()).rejects.toBeInstanceOf(GroupActiveError);
    expect(await group.cancel()).toBe(2);
    expect((await group.join()).map((r) => r.outcome)).toEqual([{ status: "cancelled" }, { status: "cancelled" }]);

    const worker = env.runner.spawn();
    const done = env.runner.group("done", emailJob);
    await done.submit([{ to: "a@x.io" }]);
    await done.join();
    const jobId = done.handle("item-0").jobId;
    expect(await env.queue.kvGet(`jobs/results/jobs/${jobId}`)).not.toBeNull();
    expect(await done.forget()).toBe(true);
    expect(await env.queue.kvGet(`jobs/results/jobs/${jobId}`)).toBeNull();
    expect(await done.status()).toBeNull();
    await worker.shutdown();
    await env.stop();
  });

  it("group retention removes a joined group after the window", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, handler([])).groupRetention(10_000));
    const group = env.runner.group("retained", emailJob);
    await group.submit([{ to: "a@x.io" }]);
    await group.join();
    const jobId = group.handle("item-0").jobId;
    env.clock.advance(10_000);
    expect(await env.runner.runtime.sweepGroups()).toBe(1);
    expect(await group.status()).toBeNull();
    expect(await env.queue.kvGet(`jobs/results/jobs/${jobId}`)).toBeNull();
    await env.stop();
  });

  it("an invalid item rejects the whole submission and writes nothing", async () => {
    const env = await openJobEnv((b) => b.register(emailJob, handler([])), { start: false });
    const group = env.runner.group("invalid", emailJob);
    const err = await group.submit([{ to: "a@x.io" }, { to: "nope" }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/item 1/);
    await expect(group.submit([{ to: "a@x.io" }], { idempotencyKey: "k" } as never)).rejects.toBeInstanceOf(ValidationError);
    expect(await group.status()).toBeNull();
    expect((await env.queue.kvScan("")).entries).toEqual([]);
    await env.stop();
  });
});
