/**
 * @module The contract guard: a worker whose job or workflow contract is
 * older than the newest one that ran over the store refuses to start, and
 * nothing runs; a newer one goes ahead; an intended rollback is allowed
 * explicitly.
 */
import { describe, expect, it } from "vitest";
import { ContractTooOldError, defineJob, JobRunner, MemoryStore, MockClock, Queue, type ObjectStore } from "taquba";
import { emailJob } from "../jobs/fixtures.js";
import { checkContracts } from "../../runtime/typed/contract-guard.js";
import { whilePolluted } from "../support/polluted-prototype.js";

/** The fixture job under another contract hash, as a changed spec would generate it. */
const emailJobWith = (contractHash: string) =>
  defineJob({
    name: emailJob.name,
    package: "test",
    input: emailJob.input,
    output: emailJob.output,
    error: emailJob.error!,
    headers: emailJob.headers!,
    contractHash,
  });

async function start(store: ObjectStore, contractHash: string, calls: string[], opts: { allowDowngrade?: boolean } = {}) {
  const queue = await Queue.open(store, "contracts", { clock: new MockClock(1_700_000_000_000), flushIntervalMs: 0 });
  let b = JobRunner.builder(queue, store).register(emailJobWith(contractHash), {
    async run(input) {
      calls.push(`${contractHash}:${input.to}`);
      return { message_id: `m-${input.to}` };
    },
  });
  if (opts.allowDowngrade) b = b.allowContractDowngrade();
  const runner = b.build();
  return { queue, runner };
}

describe("contract guard", () => {
  it("a worker older than the contract that last ran refuses to start; a newer one goes ahead", async () => {
    const store = new MemoryStore();
    const calls: string[] = [];

    const v1 = await start(store, "v1", calls);
    const w1 = v1.runner.spawn();
    expect(await (await v1.runner.submit(emailJobWith("v1"), { to: "a@x.io" })).result()).toMatchObject({ status: "succeeded" });
    await w1.shutdown();
    await v1.queue.close();

    // A newer contract starts, and is recorded as the newest.
    const v2 = await start(store, "v2", calls);
    const w2 = v2.runner.spawn();
    expect(await (await v2.runner.submit(emailJobWith("v2"), { to: "b@x.io" })).result()).toMatchObject({ status: "succeeded" });
    await w2.shutdown();
    await v2.queue.close();

    // The old code again: its worker refuses to start, and a job waiting in the queue does not run.
    const back = await start(store, "v1", calls);
    const pending = await back.runner.submit(emailJobWith("v1"), { to: "c@x.io" });
    const err = await back.runner.run(new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContractTooOldError);
    expect((err as ContractTooOldError).message).toContain("allowContractDowngrade");
    expect(await pending.fetchResult()).toBeNull();
    expect(calls).toEqual(["v1:a@x.io", "v2:b@x.io"]);
    await back.queue.close();

    // An intended rollback is allowed explicitly, and then is the newest: the next start of v2 is newer again.
    const rollback = await start(store, "v1", calls, { allowDowngrade: true });
    const wr = rollback.runner.spawn();
    expect(await rollback.runner.handle(emailJobWith("v1"), pending.jobId).result()).toMatchObject({ status: "succeeded" });
    await wr.shutdown();
    await rollback.queue.close();
    expect(calls).toEqual(["v1:a@x.io", "v2:b@x.io", "v1:c@x.io"]);

    const forward = await start(store, "v2", calls);
    const wf = forward.runner.spawn();
    await wf.shutdown();
    await forward.queue.close();
  });

  it("the same contract restarting is not a change, and the refusal writes nothing", async () => {
    const store = new MemoryStore();
    const calls: string[] = [];
    for (const hash of ["v1", "v1", "v2"]) {
      const s = await start(store, hash, calls);
      await s.runner.spawn().shutdown();
      await s.queue.close();
    }
    const old = await start(store, "v1", calls);
    await expect(old.runner.run(new AbortController().signal)).rejects.toBeInstanceOf(ContractTooOldError);
    await expect(old.runner.run(new AbortController().signal)).rejects.toBeInstanceOf(ContractTooOldError);
    await old.queue.close();
    const again = await start(store, "v2", calls);
    await again.runner.spawn().shutdown();
    await again.queue.close();
  });

  it("records a first contract while Object.prototype holds its hash at -1 (read as the last of no contracts)", async () => {
    const queue = await Queue.open(new MemoryStore(), "contracts", { clock: new MockClock(1_700_000_000_000), flushIntervalMs: 0 });
    await whilePolluted({ "-1": "v2" }, () => checkContracts(queue, "contracts", [{ name: "job", hash: "v2" }]));
    await checkContracts(queue, "contracts", [{ name: "job", hash: "v3" }]);
    // v2 was recorded before v3: it is refused as older.
    const err = await checkContracts(queue, "contracts", [{ name: "job", hash: "v2" }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContractTooOldError);
    await queue.close();
  });
});
