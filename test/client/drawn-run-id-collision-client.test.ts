/**
 * @module A run id a `TaqubaClient` draws that a run already holds. The
 * client draws the id itself (it routes by it on a sharded store) and the
 * owner used to take it as a caller's id: a run under it with the same
 * input was answered as this submission (its input dropped), one with
 * another input refused it with `InputMismatchError`. The owner now
 * submits a drawn id as a fresh one, drawing another (on the same shard)
 * when a record holds it. The id source is forced to name the taken id.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createShards, MemoryStore, RunId, TaqubaClient, type RunOptions, type SubmitOutcome } from "taquba";
import { shardOfRun, shardStoreName } from "../../runtime/client/shard-route.js";
import { openOwner, STEP_QUEUE, STORE_NAME, type OwnerApp } from "./fixtures/app.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : JSON.parse(new TextDecoder().decode(b)));

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of open.splice(0).reverse()) await c();
});

/** Submits `input` with no run id while the client's id source names `taken` first. */
async function drawingTaken(client: TaqubaClient, taken: string, input: Uint8Array, options?: RunOptions): Promise<SubmitOutcome> {
  const draw = vi.spyOn(RunId, "generate").mockReturnValueOnce(taken as RunId);
  try {
    return await client.submit({ input, ...(options === undefined ? {} : { options }) });
  } finally {
    expect(draw).toHaveBeenCalled();
    draw.mockRestore();
  }
}

/** A run whose first step is an hour away: it stays pending through the test. */
const later = { input: enc({ who: "later" }), options: { runAt: Date.now() + 3_600_000 } };

/** Each case: the caller's run under the id drawn next, ended or pending, with the same input as the drawn submission or another. */
async function expectRedrawn(client: TaqubaClient, taken: string, shards: number): Promise<void> {
  // Ended, same input: before, answered { runId: taken, newlySubmitted: false } and nothing ran.
  await client.submit({ runId: taken, input: enc({ who: "same" }) });
  expect(dec((await client.wait(taken)).outcome?.result)).toEqual({ who: "same" });
  const same = await drawingTaken(client, taken, enc({ who: "same" }));
  expect(same.runId).not.toBe(taken);
  expect(same.newlySubmitted).toBe(true);
  expect(shardOfRun(same.runId, shards)).toBe(shardOfRun(taken, shards));
  expect(dec((await client.wait(same.runId)).outcome?.result)).toEqual({ who: "same" });

  // Pending (its first step an hour away), another input: before, refused with InputMismatchError.
  const waiting = `${taken}-w`;
  await client.submit({ runId: waiting, ...later });
  const other = await drawingTaken(client, waiting, enc({ who: "other" }));
  expect(other.runId).not.toBe(waiting);
  expect(other.newlySubmitted).toBe(true);
  expect(dec((await client.wait(other.runId)).outcome?.result)).toEqual({ who: "other" });

  // Pending, same input: before, the pending run answered as this submission.
  const alike = await drawingTaken(client, waiting, later.input, later.options);
  expect(alike.runId).not.toBe(waiting);
  expect(alike.newlySubmitted).toBe(true);
  expect((await client.status(alike.runId))?.state).not.toBe("terminated");

  // The caller's runs are as they were.
  expect(dec((await client.outcome(taken))?.result)).toEqual({ who: "same" });
  expect((await client.status(waiting))?.state).not.toBe("terminated");
  // A caller's own id is still a caller's: the same input is a duplicate, another a mismatch.
  expect(await client.submit({ runId: waiting, ...later })).toMatchObject({ runId: waiting, newlySubmitted: false });
  await expect(client.submit({ runId: waiting, input: enc({ who: "x" }) })).rejects.toMatchObject({ code: "INPUT_MISMATCH" });
}

describe("a run id a client draws that a run holds", () => {
  it("one store: the owner draws another id, and neither run loses its input", async () => {
    const store = new MemoryStore();
    const owner = await openOwner(store, { listIntervalMs: 20 });
    open.push(() => owner.stop());
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 20_000 });
    open.push(() => client.close());
    await expectRedrawn(client, "caller-run", 1);
  });

  it("a sharded store: the owner of the drawn id's shard draws another id of its shard", async () => {
    const SHARDS = 3;
    const store = new MemoryStore();
    await createShards(store, STORE_NAME, SHARDS);
    const owners: OwnerApp[] = [];
    for (let i = 0; i < SHARDS; i++) owners.push(await openOwner(store, { name: shardStoreName(STORE_NAME, i), listIntervalMs: 20 }));
    open.push(async () => {
      for (const o of owners) await o.stop();
    });
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 20_000 });
    open.push(() => client.close());
    await expectRedrawn(client, "caller-run", SHARDS);
  });
});
