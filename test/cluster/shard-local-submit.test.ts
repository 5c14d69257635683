/**
 * @module Submitting on a shard itself (a runtime or job runner over one
 * shard's queue, not through a client): a caller-chosen run id or job
 * idempotency key that routes to another shard is refused before anything
 * is written (clients would look for the run on that other shard), one
 * that routes here is accepted, and a generated run id always routes here,
 * so a client on the sharded store finds the run.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createShards, JobRunner, MemoryStore, Queue, TaqubaClient, ValidationError } from "taquba";
import { shardOfRun, shardStoreName } from "../../runtime/client/shard-route.js";
import { keyedJobRunId } from "../../runtime/jobs/job-codec.js";
import { emailJob } from "../jobs/fixtures.js";

const SHARDS = 3;
const HERE = 0;
const STEPS = "shard-steps";
const enc = new TextEncoder();

/** The first `prefix{n}` for which `route(prefix{n})` is (or is not) shard `HERE`. */
function pick(prefix: string, onHere: boolean, route: (candidate: string) => number): string {
  for (let n = 0; ; n++) if ((route(`${prefix}${n}`) === HERE) === onHere) return `${prefix}${n}`;
}

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c();
});

describe("submitting on a shard", () => {
  it("refuses run ids and idempotency keys of another shard, and routes generated ids here", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const queue = await Queue.open(store, shardStoreName("app", HERE), { flushIntervalMs: 0 });
    open.push(() => queue.close());
    expect(queue.shard).toEqual({ shard: HERE, shards: SHARDS });
    const runner = JobRunner.builder(queue, store)
      .queueName(STEPS)
      .register(emailJob, { run: async (input) => ({ message_id: input.to }) })
      .build();

    // A run id of another shard: refused, in the caller's terms, and nothing written.
    const elsewhere = pick("order-", false, (id) => shardOfRun(id, SHARDS));
    const refused = await runner.submit({ runId: elsewhere, input: enc.encode("{}") }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as Error).message).toContain(`run "${elsewhere}" belongs to shard ${shardOfRun(elsewhere, SHARDS)} of ${SHARDS}`);
    expect((refused as Error).message).toContain("TaqubaClient");
    expect(await runner.status(elsewhere)).toBeNull();

    // A run id of this shard is accepted.
    const here = pick("order-", true, (id) => shardOfRun(id, SHARDS));
    expect((await runner.submit({ runId: here, input: enc.encode("{}") })).newlySubmitted).toBe(true);

    // Generated ids route here, whatever the id would have been.
    const generated: string[] = [];
    for (let i = 0; i < 12; i++) generated.push((await runner.submit({ input: enc.encode(`{"i":${i}}`) })).runId);
    expect(generated.map((id) => shardOfRun(id, SHARDS))).toEqual(Array(12).fill(HERE));

    // A job's idempotency key names one run id: the key of another shard is refused, nothing written.
    const keyOf = (key: string) => shardOfRun(keyedJobRunId(STEPS, emailJob.name, key), SHARDS);
    const otherKey = pick("welcome-", false, keyOf);
    const jobRefused = await runner.submit(emailJob, { to: "a@b.c" }, { idempotencyKey: otherKey }).catch((e: unknown) => e);
    expect(jobRefused).toBeInstanceOf(ValidationError);
    expect((jobRefused as Error).message).toContain(`job "${emailJob.name}" with idempotency key "${otherKey}"`);
    expect(await runner.status(keyedJobRunId(STEPS, emailJob.name, otherKey))).toBeNull();
    const hereKey = pick("welcome-", true, keyOf);
    const job = await runner.submit(emailJob, { to: "a@b.c" }, { idempotencyKey: hereKey });
    expect(job.jobId).toBe(keyedJobRunId(STEPS, emailJob.name, hereKey));
    // A job without a key gets a generated id of this shard.
    const plain = await runner.submit(emailJob, { to: "b@b.c" });
    expect(shardOfRun(plain.jobId, SHARDS)).toBe(HERE);

    // A client on the sharded store finds every run made here.
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEPS, pollIntervalMs: 200 });
    open.push(() => client.close());
    for (const id of [here, ...generated, job.jobId, plain.jobId]) expect((await client.status(id))?.runId, id).toBe(id);
  });
});
