/**
 * @module A TaqubaClient over a store whose listings ignore the prefix and
 * start-after (every key from the first, as some proxies answer): a store
 * name no owner opened yet still reads as holding no runs, although another
 * store name beside it holds a queue, and a queue that exists is read as
 * its own, not taken for its neighbour's.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, TaqubaClient, WorkflowRuntime } from "taquba";
import { appRunner, STEP_QUEUE } from "./fixtures/app.js";
import { listingEverything } from "../support/careless-listings.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("a TaqubaClient over a store whose listings ignore the prefix", () => {
  it("reads a store name no owner opened as holding no runs, beside another that holds a queue", async () => {
    const inner = new MemoryStore();
    const queue = await Queue.open(inner, "another", { flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(queue, inner, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    await runtime.submit({ input: new TextEncoder().encode("{}") });
    await queue.flush();
    closers.push(() => queue.close());

    const client = await TaqubaClient.open(listingEverything(inner), { name: "app", queueName: STEP_QUEUE, timeoutMs: 1_000 });
    closers.push(() => client.close());
    expect((await client.listRuns()).runs).toEqual([]);
    const neighbour = await TaqubaClient.open(listingEverything(inner), { name: "another", queueName: STEP_QUEUE, timeoutMs: 1_000 });
    closers.push(() => neighbour.close());
    expect((await neighbour.listRuns()).runs).toHaveLength(1);
  });
});
