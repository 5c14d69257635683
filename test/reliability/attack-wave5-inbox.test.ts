/**
 * @module Attack on the client inbox window: debounced submissions of one
 * key made in order while the owner was away leave the last one made
 * waiting, each earlier one superseded by the next; a window holding a
 * request of every kind (enumerated from the request type) answers each
 * once, with nothing dead-lettered, logged or left over.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, serveClients, TaqubaClient, WorkflowRuntime, type ObjectStore } from "taquba";
import { appRunner, STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";
import { monotonicFactory } from "ulid";
import { answerKey, requestKey } from "../../runtime/client/inbox-layout.js";
import { decodeAnswer, encodeRequest, type InboxRequest } from "../../runtime/client/request-codec.js";
import { testRandom } from "../support/seed.js";
import { until } from "../support/until.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

const logged: unknown[] = [];
async function inboxOwner(store: ObjectStore, maxConcurrentRequests: number) {
  const queue = await Queue.open(store, STORE_NAME, { flushIntervalMs: 2 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox = serveClients(queue, runtime, {
    store,
    listIntervalMs: 20,
    maxConcurrentRequests,
    logger: { error: (o: unknown, m?: string) => void logged.push([m, String((o as { err?: unknown }).err)]) },
  });
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
  for await (const o of store.list(`${STORE_NAME}/`)) if (o.key.includes("/requests/") && !/\/[.~]keep$/.test(o.key)) n++;
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

/** One well-formed request of every op kind: the record's type makes a new kind a compile error here until it is added. */
function oneOfEach(input: (v: unknown) => Uint8Array): Record<InboxRequest["op"], InboxRequest[]> {
  const member = [{ key: "m", input: input({}) }];
  return {
    submit: [{ op: "submit", runId: "r-all", input: input({ wait: "sig-all" }), options: {}, kvOps: [] }],
    signal: [{ op: "signal", key: "sig-all", payload: input("hello") }],
    clearSignal: [{ op: "clearSignal", key: "sig-none" }],
    cancel: [{ op: "cancel", runId: "r-all" }],
    retry: [
      { op: "retry", runId: "r-all" },
      { op: "retry", runId: "r-all", job: true },
    ],
    job: [{ op: "job", job: { name: "no-such-job", payload: input({}), runOptions: {}, runId: "j-all" } }],
    requeueDead: [{ op: "requeueDead", jobId: "no-such-job" }],
    recountStats: [
      { op: "recountStats", queueName: "workflow-steps", dryRun: true },
      { op: "recountStats", queueName: "no-such-queue" },
    ],
    repair: [
      { op: "repair", runId: "r-all", dryRun: true },
      { op: "repair", runId: "no-such-run" },
    ],
    schedule: [
      { op: "schedule", action: "pause", scheduleId: "no-such-schedule" },
      { op: "schedule", action: "backfill", scheduleId: "no-such-schedule", fromMs: 0, toMs: 1 },
    ],
    groupManifest: [{ op: "groupManifest", groupId: "g-all", members: member }],
    groupMembers: [{ op: "groupMembers", groupId: "g-all", createdAtMs: 1, members: member }],
    groupForget: [{ op: "groupForget", groupId: "g-all", createdAtMs: 1, manifest: true }],
    groupRetain: [{ op: "groupRetain", groupId: "g-all", createdAtMs: 1, manifest: true }],
  };
}

describe("attack: a window holding a request of every kind", () => {
  it("every request is answered once, none dead-lettered or left over, and one run's requests keep their order around the others", async () => {
    const store = new MemoryStore();
    const ulid = monotonicFactory();
    const made: Array<{ id: string; op: string }> = [];
    const kinds = oneOfEach(enc);
    // Requests about other runs between them, so the window has concurrent work around the ones of one subject.
    let n = 0;
    for (const [op, requests] of Object.entries(kinds)) {
      for (const r of requests) {
        for (const extra of [r, { op: "submit", runId: `r-free-${n++}`, input: enc({ wait: "never" }), options: {}, kvOps: [] } satisfies InboxRequest]) {
          const id = ulid(Date.now());
          await store.put(`${STORE_NAME}/${requestKey(STEP_QUEUE, id)}`, encodeRequest(extra as InboxRequest));
          made.push({ id, op: extra === r ? op : "submit" });
        }
      }
    }
    const owner = await inboxOwner(store, 32);
    await until("every request answered", async () => (await inboxCount(store)) === 0);
    const answers = await Promise.all(
      made.map(async (m) => ({ ...m, answer: decodeAnswer((await store.get(`${STORE_NAME}/${answerKey(STEP_QUEUE, m.id)}`))!.body) })),
    );
    expect(new Set(answers.map((a) => a.op))).toEqual(new Set(Object.keys(kinds)));
    expect(owner.inbox.stats.applied, "requests applied").toBe(made.length);
    expect(logged, "errors the inbox logged").toEqual([]);
    let dead = 0;
    for await (const o of store.list(`${STORE_NAME}/`)) if (o.key.includes("/dead/")) dead++;
    expect(dead, "dead-lettered requests").toBe(0);
    const byOp = (op: string) => answers.filter((a) => a.op === op).map((a) => a.answer);
    expect(byOp("submit")[0]).toMatchObject({ ok: true, value: { newlySubmitted: true } });
    expect(byOp("schedule").every((a) => !a.ok)).toBe(true);
    expect(byOp("requeueDead")).toEqual([{ ok: true, value: false }]);
    await owner.stop();
  });
});
