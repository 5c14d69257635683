/**
 * @module Child runs on a sharded store: a child runs on its parent's
 * shard, and its run id routes there, so a client's status, signal, wait
 * and cancel of a child reach it, and the parent still joins its ends.
 * Every shard's owner runs in this process over one MemoryStore.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  createShards,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  serveClients,
  StepOutcome,
  TaqubaClient,
  WorkflowRuntime,
  type ObjectStore,
  type Step,
  type StepRunner,
} from "taquba";
import { shardOfRun, shardStoreName } from "../../runtime/client/shard-route.js";
import { childRunId } from "../../runtime/workflow/children/child-runs.js";

const SHARDS = 4;
const Q = "family-steps";
const enc = new TextEncoder();
const dec = new TextDecoder();
type Payload = { kind: "parent"; children: number } | { kind: "join"; keys: string[]; got: string[] } | { kind: "child" } | { kind: "child-resume" };
const json = (p: Payload): Uint8Array => enc.encode(JSON.stringify(p));

/** Parents start children that wait for `go:{their run id}`, then join their ends in order. */
const familyRunner: StepRunner = {
  async runStep(s: Step) {
    const p = JSON.parse(dec.decode(s.payload)) as Payload;
    const endText = async (): Promise<string> => {
      const o = await s.children.outcome(s.signal as Uint8Array);
      return o.status === "succeeded" ? `${o.runId}:${dec.decode(o.result)}` : `${o.runId}:${o.status}`;
    };
    switch (p.kind) {
      case "parent": {
        const keys: string[] = [];
        for (let i = 0; i < p.children; i++) keys.push((await s.children.start({ input: json({ kind: "child" }) })).completionKey);
        const [first, ...rest] = keys;
        return StepOutcome.continueOnChild(json({ kind: "join", keys: rest, got: [] }), first!);
      }
      case "join": {
        const got = [...p.got, await endText()];
        const [next, ...rest] = p.keys;
        if (next === undefined) return StepOutcome.succeed(enc.encode(got.join("|")));
        return StepOutcome.continueOnChild(json({ kind: "join", keys: rest, got }), next);
      }
      case "child":
        // Routed like a client's signal: the text after the last ':' picks the shard.
        return StepOutcome.continueOnSignal(json({ kind: "child-resume" }), `go:${s.runId}`, 3_600_000);
      case "child-resume":
        return StepOutcome.succeed(s.signal ?? enc.encode("none"));
    }
  },
};

async function openShard(store: ObjectStore, i: number) {
  const queue = await Queue.open(store, shardStoreName("app", i), { flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, familyRunner, NoopTerminalHook).queueName(Q).build();
  const worker = runtime.spawn();
  const inbox = serveClients(queue, runtime, { store, listIntervalMs: 20 });
  return {
    runtime,
    async stop() {
      await inbox.stop();
      await worker.shutdown();
      await queue.close();
    },
  };
}

const open: Array<{ stop(): Promise<void> } | { close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await ("stop" in o ? o.stop() : o.close());
});

describe("child runs across shards", () => {
  it("a child's id routes to its parent's shard: status, signal, wait and cancel through a client reach it", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const shards = await Promise.all(Array.from({ length: SHARDS }, (_, i) => openShard(store, i)));
    open.push(...shards);
    const client = await TaqubaClient.open(store, { name: "app", queueName: Q, pollIntervalMs: 200 });
    open.push(client);

    // A parent on every shard, two children each.
    const parents = Array.from({ length: 8 }, (_, i) => `parent-${i}`);
    expect(new Set(parents.map((p) => shardOfRun(p, SHARDS))).size).toBe(SHARDS);
    for (const runId of parents) await client.submit({ runId, input: json({ kind: "parent", children: 2 }) });
    const children = parents.flatMap((p) =>
      [0, 1].map((k) => ({ parent: p, child: childRunId(p, 0, String(k), { shard: shardOfRun(p, SHARDS), shards: SHARDS }) })),
    );
    // Derived from the parent, and routed to its shard (most need a suffix for that).
    for (const { parent, child } of children) {
      expect(child.startsWith(`${parent}-s0-`)).toBe(true);
      expect(shardOfRun(child, SHARDS)).toBe(shardOfRun(parent, SHARDS));
    }
    expect(children.some(({ parent, child }) => child !== `${parent}-s0-${child.endsWith("1") ? 1 : 0}`)).toBe(true);
    for (const { child } of children) {
      // Waiting for its signal: step 1 is scheduled.
      await expect.poll(async () => await client.status(child), { timeout: 20_000 }).toMatchObject({ state: "pending", step: 1 });
    }

    // One child is cancelled through the client; the others get their signal.
    const [cancelled, ...rest] = children;
    expect(await client.cancel(cancelled!.child)).toBe(true);
    for (const { child } of rest) expect(await client.signal(`go:${child}`, enc.encode(`go ${child}`))).toBe("delivered");
    expect((await client.wait(cancelled!.child)).termination.status).toBe("cancelled");
    for (const { child } of rest) {
      const end = await client.wait(child);
      expect(end.termination.status).toBe("succeeded");
      expect(dec.decode(end.outcome!.result!)).toBe(`go ${child}`);
    }
    // Each parent joined its children's ends on its own shard.
    for (const p of parents) {
      const end = await client.wait(p);
      expect(end.termination.status).toBe("succeeded");
      const mine = children.filter((c) => c.parent === p).map((c) => c.child);
      const want = mine.map((c) => (c === cancelled!.child ? `${c}:cancelled` : `${c}:go ${c}`)).join("|");
      expect(dec.decode(end.outcome!.result!)).toBe(want);
    }
    expect((await client.listRuns({ limit: 100 })).runs).toHaveLength(parents.length + children.length);
  }, 60_000);

  it("a parent id submitted again after its end gets children of its own, routed to its shard", async () => {
    const store = new MemoryStore();
    await createShards(store, "app", SHARDS);
    const shards = await Promise.all(Array.from({ length: SHARDS }, (_, i) => openShard(store, i)));
    open.push(...shards);
    const client = await TaqubaClient.open(store, { name: "app", queueName: Q, pollIntervalMs: 200 });
    open.push(client);
    const parent = "again-3";
    const placement = { shard: shardOfRun(parent, SHARDS), shards: SHARDS };
    const runOnce = async (submission: string): Promise<string> => {
      const mine = [0, 1].map((k) => childRunId(parent, 0, String(k), placement, submission));
      for (const child of mine) {
        await expect.poll(async () => await client.status(child), { timeout: 20_000 }).toMatchObject({ state: "pending", step: 1 });
        expect(await client.signal(`go:${child}`, enc.encode(`go ${child}`))).toBe("delivered");
      }
      const end = await client.wait(parent);
      expect(end.termination.status).toBe("succeeded");
      return dec.decode(end.outcome!.result!);
    };

    await client.submit({ runId: parent, input: json({ kind: "parent", children: 2 }) });
    const first = [0, 1].map((k) => childRunId(parent, 0, String(k), placement));
    for (const child of first) {
      await expect.poll(async () => await client.status(child), { timeout: 20_000 }).toMatchObject({ state: "pending", step: 1 });
      expect(await client.signal(`go:${child}`, enc.encode(`go ${child}`))).toBe("delivered");
    }
    expect(dec.decode((await client.wait(parent)).outcome!.result!)).toBe(first.map((c) => `${c}:go ${c}`).join("|"));

    // The same id and input again: a new run, whose children carry its submission and still route to the parent's shard.
    const again = await client.submit({ runId: parent, input: json({ kind: "parent", children: 2 }) });
    expect(again.newlySubmitted).toBe(true);
    // Drawn at submission (not step 0's job id), as the run's history reports it.
    const submission = (await client.inspectRun(parent))?.submission;
    expect(submission).toMatch(/^[0-9A-Z]{26}$/);
    expect(submission).not.toBe(again.jobId);
    const second = [0, 1].map((k) => childRunId(parent, 0, String(k), placement, submission));
    for (const child of second) {
      expect(child.startsWith(`${parent}-s0-`)).toBe(true);
      expect(first).not.toContain(child);
      expect(shardOfRun(child, SHARDS)).toBe(placement.shard);
    }
    expect(await runOnce(submission!)).toBe(second.map((c) => `${c}:go ${c}`).join("|"));
    // The earlier run's children kept their own ends.
    for (const child of first) expect(dec.decode((await client.wait(child)).outcome!.result!)).toBe(`go ${child}`);
  }, 60_000);
});

describe("a runtime's shard placement", () => {
  it("a queue knows its shard when it opens, and a shard the store does not have is refused before anything is written", async () => {
    const store = new MemoryStore();
    const plain = await Queue.open(store, "plain", { flushIntervalMs: 1 });
    expect(plain.shard).toBeUndefined();
    await plain.close();
    const early = await Queue.open(store, "app/shards/1", { flushIntervalMs: 1 });
    expect(early.shard, "no layout: not sharded").toBeUndefined();
    await early.close();
    await createShards(store, "late", SHARDS);
    const q = await Queue.open(store, "late/shards/3", { flushIntervalMs: 1 });
    expect(q.shard).toEqual({ shard: 3, shards: SHARDS });
    await q.close();
    const before: string[] = [];
    for await (const o of store.list("")) before.push(o.key);
    await expect(Queue.open(store, "late/shards/9")).rejects.toThrow(/shard 9, but the store "late" has 4 shards/);
    const after: string[] = [];
    for await (const o of store.list("")) after.push(o.key);
    expect(after).toEqual(before);
  });

  it("derives child ids that route to the parent's shard, stable across calls, within the run id length for any parent", () => {
    for (const shards of [2, 7, 256]) {
      for (const parent of ["p", "x".repeat(128), "order-42"]) {
        const shard = shardOfRun(parent, shards);
        const a = childRunId(parent, 3, "k", { shard, shards });
        expect(a.length).toBeLessThanOrEqual(128);
        expect(shardOfRun(a, shards)).toBe(shard);
        expect(childRunId(parent, 3, "k", { shard, shards })).toBe(a);
        expect(childRunId(parent, 3, "j", { shard, shards })).not.toBe(a);
      }
    }
    // One shard, or no placement: the id an unsharded runtime has always used.
    expect(childRunId("short", 3, "k", { shard: 0, shards: 1 })).toBe("short-s3-k");
    expect(childRunId("short", 3, "k")).toBe("short-s3-k");
  });
});
