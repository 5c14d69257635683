/**
 * @module The owner's inbox applies a listing's requests concurrently:
 * many submissions share commits, requests about the same run are applied
 * in the order they were made, and store faults part way through a window
 * leave every request applied exactly once.
 */
import { describe, expect, it } from "vitest";
import { JobRunner, MemoryStore, NoopTerminalHook, Queue, serveClients, TaqubaClient, withCounting, WorkflowRuntime, type ObjectStore } from "taquba";
import { keyedJobRunId } from "../../runtime/jobs/job-codec.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";
import { emailJob } from "../jobs/fixtures.js";
import { testRandom } from "../support/seed.js";
import { until } from "../support/until.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** An owner that applies inbox requests and runs no steps (so its commits are the inbox's alone). */
async function inboxOwner(store: ObjectStore, maxConcurrentRequests: number, logger = { error: () => undefined }) {
  const queue = await Queue.open(store, STORE_NAME, { flushIntervalMs: 2 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 20, maxConcurrentRequests, logger });
  return {
    runtime,
    inbox,
    async stop() {
      await inbox.stop();
      await queue.close();
    },
  };
}

async function inboxCount(store: ObjectStore): Promise<number> {
  let n = 0;
  for await (const o of store.list(`${STORE_NAME}/`)) if (o.key.includes("/requests/") && !o.key.endsWith("/.keep")) n++;
  return n;
}

/** A store that slows every call a little, so requests that share a commit show it. */
function slowed(store: ObjectStore, ms: number): ObjectStore {
  const wait = () => new Promise<void>((r) => setTimeout(r, ms));
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

describe("the client inbox applies requests concurrently", () => {
  it("refuses an absurd window before serving", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, STORE_NAME);
    const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e30, 1001]) {
      expect(() => serveClients(queue, runtime, { store, maxConcurrentRequests: bad }), String(bad)).toThrow(
        /maxConcurrentRequests must be a whole number from 1 to 1000/,
      );
    }
    // Nothing served: a valid call afterwards is accepted.
    const inbox = serveClients(queue, runtime, { store, maxConcurrentRequests: 1000 });
    await inbox.stop();
    await queue.close();
  });

  it("64 waiting submissions take far fewer commits than one each; one at a time takes one each", async () => {
    for (const window of [32, 1]) {
      const inner = new MemoryStore();
      const client = await TaqubaClient.open(inner, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 60_000 });
      const outs = Array.from({ length: 64 }, (_, i) => client.submit({ runId: `r-${i}`, input: enc({ wait: `k-${i}` }) }));
      await until("64 requests in the inbox", async () => (await inboxCount(inner)) === 64);
      const counted = withCounting(inner);
      let walPuts = 0;
      const store: ObjectStore = { ...counted, put: (k, b, o) => (k.includes("/wal/") && walPuts++, counted.put(k, b, o)) };
      const owner = await inboxOwner(slowed(store, 2), window);
      const afterOpen = walPuts;
      const answers = await Promise.all(outs);
      expect(answers.every((a) => a.newlySubmitted)).toBe(true);
      const commits = walPuts - afterOpen;
      if (window === 32) expect(commits, "WAL objects for 64 submissions, 32 at once").toBeLessThanOrEqual(16);
      else expect(commits, "WAL objects for 64 submissions, one at a time").toBeGreaterThanOrEqual(64);
      expect(owner.inbox.stats.applied).toBe(64);
      await client.close();
      await owner.stop();
    }
  });

  it("requests about one run are applied in the order they were made, others around them", async () => {
    const store = new MemoryStore();
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 60_000 });
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 20; i++) {
      // Made in this order, all waiting in the inbox together: a cancel applied before its submit would find no run.
      calls.push(client.submit({ runId: `c-${i}`, input: enc({ wait: `never-${i}` }) }));
      calls.push(client.cancel(`c-${i}`));
      calls.push(client.submit({ runId: `free-${i}`, input: enc({ wait: `free-${i}` }) }));
      await new Promise((r) => setTimeout(r, 1)); // distinct request ids in time order
    }
    await until("60 requests in the inbox", async () => (await inboxCount(store)) === 60);
    const owner = await inboxOwner(store, 32);
    const answers = await Promise.all(calls);
    for (let i = 0; i < 20; i++) expect(answers[i * 3 + 1], `cancel of c-${i}`).toBe(true);
    for (let i = 0; i < 20; i++) expect(await owner.runtime.status(`c-${i}`), `c-${i}`).toMatchObject({ state: "terminated", status: "cancelled" });
    for (let i = 0; i < 20; i++) expect((await owner.runtime.status(`free-${i}`))?.state, `free-${i}`).not.toBe("terminated");
    await client.close();
    await owner.stop();
  });

  it("a keyed job's submission and a cancel of its run are applied in the order they were made", async () => {
    const store = new MemoryStore();
    const client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 60_000 });
    const runIds = Array.from({ length: 20 }, (_, i) => keyedJobRunId(STEP_QUEUE, emailJob.name, `key-${i}`));
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 20; i++) {
      // The submission names its run by job name and key, the cancel by run id: the same run, both waiting in one window.
      calls.push(client.submit(emailJob, { to: `a${i}@b.co` }, { idempotencyKey: `key-${i}` }).then((h) => h.jobId));
      calls.push(client.cancel(runIds[i]!).catch((e: unknown) => e));
      calls.push(client.submit(emailJob, { to: `free${i}@b.co` }, { idempotencyKey: `free-${i}` }).then((h) => h.jobId));
      await new Promise((r) => setTimeout(r, 1)); // distinct request ids in time order
    }
    await until("60 requests in the inbox", async () => (await inboxCount(store)) === 60);
    const queue = await Queue.open(store, STORE_NAME, { flushIntervalMs: 2 });
    // No worker: the jobs stay queued, so only the inbox's order decides whether a cancel finds its run.
    const runner = JobRunner.builder(queue, store)
      .queueName(STEP_QUEUE)
      .logger({ error: () => undefined })
      .register(emailJob, { run: async (input) => ({ message_id: input.to }) })
      .build();
    const inbox = serveClients(queue, runner, { store, listIntervalMs: 20, maxConcurrentRequests: 32 });
    const answers = await Promise.all(calls);
    for (let i = 0; i < 20; i++) {
      expect(answers[i * 3], `submission ${i}`).toBe(runIds[i]);
      expect(answers[i * 3 + 1], `cancel of keyed run ${i}`).toBe(true);
      expect(await runner.runtime.status(runIds[i]!), `keyed run ${i}`).toMatchObject({ state: "terminated", status: "cancelled" });
      expect((await runner.runtime.status(String(answers[i * 3 + 2])))?.state, `free run ${i}`).not.toBe("terminated");
    }
    await client.close();
    await inbox.stop();
    await queue.close();
  });

  it("store faults on answers and deletions part way through: every request applied once, each answered", async () => {
    const { seed, random } = testRandom("inbox faults");
    console.log(`inbox fault test: seed ${seed} (TAQUBA_TEST_SEED replays it)`);
    const inner = new MemoryStore();
    const client = await TaqubaClient.open(inner, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 60_000 });
    const outs = Array.from({ length: 48 }, (_, i) => client.submit({ runId: `f-${i}`, input: enc({ wait: `f-${i}` }) }));
    await until("48 requests in the inbox", async () => (await inboxCount(inner)) === 48);
    let faults = 0;
    const fail = (k: string) => {
      if (k.includes("/inbox/") && random() < 0.25) {
        faults++;
        throw new Error(`injected fault on ${k}`);
      }
    };
    const store: ObjectStore = {
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      put: async (k, b, o) => (fail(k), inner.put(k, b, o)),
      delete: async (k) => (fail(k), inner.delete(k)),
    };
    const owner = await inboxOwner(store, 32);
    const errors: unknown[] = [];
    const answers = await Promise.all(outs.map((p) => p.catch((e: unknown) => (errors.push(e), undefined))));
    expect(errors).toEqual([]);
    expect(faults, "faults injected").toBeGreaterThan(0);
    // Each run submitted exactly once: the first application said so, a replay answered from its mark.
    expect(answers.every((a) => a?.newlySubmitted === true)).toBe(true);
    expect(owner.inbox.stats.applied).toBe(48);
    for (let i = 0; i < 48; i++) expect(await owner.runtime.status(`f-${i}`), `f-${i}`).not.toBeNull();
    await client.close();
    await owner.stop();
  });
});
