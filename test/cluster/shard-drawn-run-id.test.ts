/**
 * @module A run id drawn on a shard that a run already holds. A runtime on
 * a shard draws ids routed to its shard, and a client draws a job's run id
 * to route it; both used to submit the drawn id as a caller's: a run under
 * it with the same input was answered as this submission, another input
 * was refused with `InputMismatchError`. Now the commit refuses a held id
 * and another id, routed to the same shard, is drawn. The id source is
 * forced to name the held id.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createShards, JobRunner, MemoryStore, Queue, RunId, serveClients, TaqubaClient } from "taquba";
import { shardOfRun, shardStoreName } from "../../runtime/client/shard-route.js";
import { emailJob } from "../jobs/fixtures.js";

const SHARDS = 3;
const HERE = 0;
const STEPS = "shard-steps";
const enc = new TextEncoder();

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of open.splice(0).reverse()) await c();
});

/** The first `prefix{n}` that routes to shard `HERE`. */
function routedHere(prefix: string): string {
  for (let n = 0; ; n++) if (shardOfRun(`${prefix}${n}`, SHARDS) === HERE) return `${prefix}${n}`;
}

/** `submit` while the id source names `taken` first. */
async function drawing<T>(taken: string, submit: () => Promise<T>): Promise<T> {
  const draw = vi.spyOn(RunId, "generate").mockReturnValueOnce(taken as RunId);
  try {
    return await submit();
  } finally {
    expect(draw).toHaveBeenCalled();
    draw.mockRestore();
  }
}

describe("a run id drawn on a shard that a run holds", () => {
  it("a shard's runtime and a client's job draw another id of the shard; the held run keeps its input", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const queue = await Queue.open(store, shardStoreName("app", HERE), { flushIntervalMs: 0 });
    open.push(() => queue.close());
    const runner = JobRunner.builder(queue, store)
      .queueName(STEPS)
      .register(emailJob, { run: async (input) => ({ message_id: input.to }) })
      .build();

    // The caller's run: its first step an hour away, so it stays pending.
    const taken = routedHere("caller-");
    const later = { input: enc.encode("caller"), options: { runAt: Date.now() + 3_600_000 } };
    expect(await runner.submit({ runId: taken, ...later })).toMatchObject({ runId: taken, newlySubmitted: true });

    // Same input: before, answered { runId: taken, newlySubmitted: false }.
    const same = await drawing(taken, () => runner.submit(later));
    expect(same.runId).not.toBe(taken);
    expect(same.newlySubmitted).toBe(true);
    expect(shardOfRun(same.runId, SHARDS)).toBe(HERE);

    // Another input: before, InputMismatchError.
    const other = await drawing(taken, () => runner.submit({ input: enc.encode("other"), options: later.options }));
    expect(other.runId).not.toBe(taken);
    expect(other.newlySubmitted).toBe(true);
    expect(shardOfRun(other.runId, SHARDS)).toBe(HERE);

    // A job a client submits under the held id (the client drew it): before, InputMismatchError.
    const worker = runner.spawn();
    open.push(() => worker.shutdown());
    const inbox = serveClients(queue, runner, { store, listIntervalMs: 20 });
    open.push(() => inbox.stop());
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEPS, pollIntervalMs: 200, timeoutMs: 20_000 });
    open.push(() => client.close());
    const job = await drawing(taken, () => client.submit(emailJob, { to: "a@b.c" }));
    expect(job.jobId).not.toBe(taken);
    expect(job.newlySubmitted).toBe(true);
    expect(shardOfRun(job.jobId, SHARDS)).toBe(HERE);
    expect(await job.output()).toEqual({ message_id: "a@b.c" });

    // The caller's run is as it was: pending, under its own input.
    expect((await runner.status(taken))?.state).toBe("pending");
    expect(await runner.submit({ runId: taken, ...later })).toMatchObject({ runId: taken, newlySubmitted: false });
    await expect(runner.submit({ runId: taken, input: enc.encode("other") })).rejects.toMatchObject({ code: "INPUT_MISMATCH" });
  });
});
