/**
 * @module Attack on the client inbox window: requests about one subject
 * made in order while the owner was away are applied in that order, also
 * when the subject is not a run id the request names (a debounce window
 * shared by several runs, a job's idempotency key, which names its run).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, serveClients, TaqubaClient, WorkflowRuntime, type ObjectStore } from "taquba";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";
import { testRandom } from "../support/seed.js";
import { until } from "../support/until.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

async function inboxOwner(store: ObjectStore, maxConcurrentRequests: number) {
  const queue = await Queue.open(store, STORE_NAME, { flushIntervalMs: 2 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 20, maxConcurrentRequests, logger: { error: () => undefined } });
  return {
    runtime,
    inbox,
    async stop() {
      await inbox.stop();
      await queue.close();
    },
  };
}

/** A store whose every call takes a random few milliseconds, so concurrent requests interleave. */
function jittered(store: ObjectStore, random: () => number): ObjectStore {
  const wait = () => new Promise<void>((r) => setTimeout(r, Math.floor(random() * 6)));
  return {
    get: async (k) => (await wait(), store.get(k)),
    put: async (k, b, o) => (await wait(), store.put(k, b, o)),
    delete: async (k) => (await wait(), store.delete(k)),
    async *list(p, o) {
      await wait();
      yield* store.list(p, o);
    },
  };
}

async function inboxCount(store: ObjectStore): Promise<number> {
  let n = 0;
  for await (const o of store.list(`${STORE_NAME}/`)) if (o.key.includes("/requests/") && !o.key.endsWith("/.keep")) n++;
  return n;
}

describe("attack: the inbox window keeps the order of requests about one debounce window", () => {
  it("debounced submissions of one key made in order while the owner was away: the last one made runs, each earlier one names its successor", async () => {
    const store = new MemoryStore();
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 60_000 });
    const debounce = { key: "digest:acme", periodMs: 3_600_000 };
    const n = 24;
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < n; i++) {
      calls.push(client.submit({ runId: `d-${i}`, input: enc({ wait: `d-${i}` }), options: { debounce } }));
      await new Promise((r) => setTimeout(r, 2)); // distinct request ids in time order
    }
    await until(`${n} requests in the inbox`, async () => (await inboxCount(store)) === n);
    const { seed, random } = testRandom("inbox debounce order");
    console.log(`inbox debounce order: seed ${seed} (TAQUBA_TEST_SEED replays it)`);
    const owner = await inboxOwner(jittered(store, random), 32);
    await Promise.all(calls);
    const listed = (await owner.runtime.listRuns({})).runs;
    const last = listed.find((r) => r.runId === `d-${n - 1}`);
    expect(last?.heldBy, "the last submission made waits in the window").toMatchObject({ reason: "debounced", key: debounce.key });
    for (let i = 0; i < n - 1; i++) {
      const s = await owner.runtime.status(`d-${i}`);
      expect(s, `d-${i}`).toMatchObject({ state: "terminated", status: "cancelled" });
      expect((await owner.runtime.wait(`d-${i}`)).termination.supersededBy, `d-${i} replaced by the next one made`).toBe(`d-${i + 1}`);
    }
    await client.close();
    await owner.stop();
  });
});
