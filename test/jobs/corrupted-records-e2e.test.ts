/**
 * @module Records damaged in storage, seen through the user's API: a job
 * result record (not MessagePack; an output or error that is not JSON), a
 * dedup record met by an idempotent resubmission, a group manifest and a
 * group member record. Each ends in StoreCorruptedError naming the damaged
 * record, never a wrong answer, a new run, or a wait that never ends. A
 * retention marker met by a sweep is skipped (reported, kept) and the sweep
 * goes on. (The decoders alone are tested in
 * test/workflow/corrupted-records.test.ts.)
 */
import { pack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "taquba";
import { jobDedupKey, jobResultKey } from "../../runtime/jobs/job-codec.js";
import { addJob, emailJob, keyedEmailJob, openJobEnv, type JobEnv } from "./fixtures.js";

const NOT_MESSAGEPACK = new Uint8Array([0xc1]);

async function expectCorrupted(p: Promise<unknown>, key: string | RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreCorruptedError);
  const objectKey = (err as StoreCorruptedError).objectKey;
  if (typeof key === "string") expect(objectKey).toBe(key);
  else expect(objectKey).toMatch(key);
}

/** The only KV key under `prefix` whose key matches `re`. */
async function onlyKey(env: JobEnv, prefix: string, re: RegExp): Promise<string> {
  const keys = (await env.queue.kvScan(prefix, { limit: 1000 })).entries.map((e) => e.key).filter((k) => re.test(k));
  expect(keys).toHaveLength(1);
  return keys[0]!;
}

describe("a damaged job result record", () => {
  const openWithDoneJob = async () => {
    const env = await openJobEnv((b) =>
      b.register(addJob, { run: async (i) => i.a + i.b }).register(emailJob, {
        run: async () => {
          throw new Error("unused");
        },
      }),
    );
    const handle = await env.runner.submit(addJob, { a: 2, b: 3 });
    expect(await handle.output()).toBe(5);
    const key = jobResultKey(env.runner.runtime.queueName, handle.jobId);
    expect(await env.queue.kvGet(key)).not.toBeNull();
    return { env, handle, key };
  };

  it("that is not MessagePack: result(), fetchResult() and output() reject with StoreCorruptedError", async () => {
    const { env, handle, key } = await openWithDoneJob();
    await env.queue.kvPut(key, NOT_MESSAGEPACK);
    await expectCorrupted(handle.result(), key);
    await expectCorrupted(handle.fetchResult(), key);
    await expectCorrupted(handle.output(), key);
    await env.stop();
  });

  it("whose output or error is not JSON: StoreCorruptedError, not a SyntaxError", async () => {
    const { env, handle, key } = await openWithDoneJob();
    const { decodeJobResult } = await import("../../runtime/jobs/job-codec.js");
    const sound = decodeJobResult((await env.queue.kvGet(key))!, key);
    await env.queue.kvPut(key, pack({ ...sound, output: "{not json" }));
    await expectCorrupted(handle.result(), key);
    await env.queue.kvPut(key, pack({ incarnation: sound.incarnation, status: "failed", error: "{not json", message: "m" }));
    await expectCorrupted(handle.result(), key);
    await env.stop();
  });
});

describe("a damaged dedup record", () => {
  it("makes an idempotent resubmission reject with StoreCorruptedError instead of starting a second run", async () => {
    const env = await openJobEnv((b) => b.register(keyedEmailJob, { run: async () => ({ message_id: "m-1" }) }));
    const first = await env.runner.submit(keyedEmailJob, { to: "a@b" });
    expect(await first.output()).toEqual({ message_id: "m-1" });
    const key = jobDedupKey(env.runner.runtime.queueName, first.jobId);
    expect(await env.queue.kvGet(key)).not.toBeNull();
    await env.queue.kvPut(key, NOT_MESSAGEPACK);
    await expectCorrupted(env.runner.submit(keyedEmailJob, { to: "a@b" }), key);
    // A record of the right form but no hash is refused the same way.
    await env.queue.kvPut(key, pack({ inputSha256: 7 }));
    await expectCorrupted(env.runner.submit(keyedEmailJob, { to: "a@b" }), key);
    await env.stop();
  });
});

describe("damaged group records", () => {
  const openWithGroup = async () => {
    const env = await openJobEnv((b) => b.register(addJob, { run: async (i) => i.a + i.b }));
    const group = env.runner.group("g-1", addJob);
    await group.submit([
      { a: 1, b: 1 },
      { a: 2, b: 2 },
    ]);
    expect((await group.join()).map((r) => r.outcome)).toEqual([
      { status: "succeeded", output: 2 },
      { status: "succeeded", output: 4 },
    ]);
    return { env, group };
  };

  it("a manifest that is not MessagePack: join(), results(), status() and resume() reject with StoreCorruptedError", async () => {
    const { env, group } = await openWithGroup();
    const manifests: string[] = [];
    for await (const o of env.store.list("")) if (/\/groups\/.*\/manifest$/.test(o.key)) manifests.push(o.key);
    expect(manifests).toHaveLength(1);
    await env.store.put(manifests[0]!, NOT_MESSAGEPACK);
    await expectCorrupted(group.join(), /\/manifest$/);
    await expectCorrupted(group.results().next(), /\/manifest$/);
    await expectCorrupted(group.status(), /\/manifest$/);
    await expectCorrupted(group.resume(), /\/manifest$/);
    await env.stop();
  });

  it("a member record that is not MessagePack: status() rejects with StoreCorruptedError", async () => {
    const { env, group } = await openWithGroup();
    const key = await onlyKey(env, "workflow/groups/", /\/item-1$/);
    await env.queue.kvPut(key, NOT_MESSAGEPACK);
    await expectCorrupted(group.status(), key);
    await env.stop();
  });

  it("a member's job result record that is not MessagePack: join() and results() reject with StoreCorruptedError", async () => {
    const { env, group } = await openWithGroup();
    const key = await onlyKey(env, "jobs/results/", /item-1$/);
    await env.queue.kvPut(key, NOT_MESSAGEPACK);
    await expectCorrupted(group.join(), key);
    const results = group.results();
    expect((await results.next()).value).toMatchObject({ key: "item-0", outcome: { status: "succeeded", output: 2 } });
    await expectCorrupted(results.next(), key);
    await env.stop();
  });
});

describe("a damaged retention marker", () => {
  it("is skipped by the memo sweep, which goes on, leaving the marker and the job's result in place", async () => {
    const env = await openJobEnv((b) => b.resultRetention(60_000).register(addJob, { run: async (i) => i.a + i.b }));
    const handle = await env.runner.submit(addJob, { a: 1, b: 2 });
    expect(await handle.output()).toBe(3);
    const key = await onlyKey(env, "workflow/terminals/", /./);
    await env.queue.kvPut(key, NOT_MESSAGEPACK);
    const other = await env.runner.submit(addJob, { a: 2, b: 2 });
    expect(await other.output()).toBe(4);
    env.clock.advance(120_000);
    expect(await env.runner.runtime.sweepMemos()).toBe(1);
    expect(await env.queue.kvGet(key)).toEqual(NOT_MESSAGEPACK);
    expect(await handle.output()).toBe(3);
    await env.stop();
  });
});
