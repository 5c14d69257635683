/**
 * @module Typed child workflows (the parent-child example's specs): a batch
 * starts one `documents.document.render` child per document through
 * `ctx.workflows` and joins their typed ends; a retried fan-out starts each
 * child once; a typed failure and a cancel reach the parent as such; a
 * cancelled parent cancels its children; the join survives a restart while
 * its children run. Over a memory store and a local directory, on a
 * `MockClock`.
 */
import { describe, expect, it } from "vitest";
import {
  LocalStore,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  StepError,
  WorkflowDispatcher,
  WorkflowRuntime,
  type ObjectStore,
  type RunnerHandle,
} from "taquba";
import { batches, documents } from "../../examples/parent-child/generated/index.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const tempDir = useTempDirs("taquba-children-");

/** Test-controlled documents: each render counts, "hold-*" waits for `release`, "bad-*" fails with the typed error. */
class Renders implements documents.DocumentRenderHandler {
  readonly count = new Map<string, number>();
  readonly holding = new Map<string, () => void>();
  async render(p: documents.DocumentRenderInput, ctx: documents.DocumentRenderRenderContext): Promise<documents.DocumentRenderRenderTransition> {
    this.count.set(ctx.runId, (this.count.get(ctx.runId) ?? 0) + 1);
    if (p.document.startsWith("hold-")) {
      const released = await new Promise<boolean>((resolve) => {
        this.holding.set(ctx.runId, () => resolve(true));
        ctx.cancelSignal.addEventListener("abort", () => resolve(false), { once: true });
      });
      this.holding.delete(ctx.runId);
      if (!released) return ctx.cancel("stopped");
    }
    if (p.document.startsWith("bad-")) return ctx.fail({ reason: `${p.document} is unreadable` });
    return ctx.succeed({ document: p.document, pages: p.document.length });
  }
}

/** The batch: fans out (failing once after starting its children when told), joins each end into the payload. */
class Batch implements batches.BatchRenderHandler {
  readonly ends: string[] = [];
  readonly failOnce = new Set<string>();
  fanOuts = 0;
  async fanOut(p: batches.BatchRenderInput, ctx: batches.BatchRenderFanOutContext): Promise<batches.BatchRenderFanOutTransition> {
    this.fanOuts++;
    const children = [];
    for (const document of p.documents) children.push(await ctx.workflows.documents.documentRender.start({ document }));
    if (this.failOnce.delete(p.batch_id)) throw StepError.transient(new Error("lost after starting the children"));
    const [first, ...rest] = children;
    return first!.onComplete(ctx.next.join, { batch_id: p.batch_id, pending: rest.map((c) => c.runId), pages: 0, rendered: [], failed: [] });
  }
  async join(p: batches.BatchRenderJoinPayload, ctx: batches.BatchRenderJoinContext): Promise<batches.BatchRenderJoinTransition> {
    const end = ctx.signal;
    const next = { ...p, rendered: [...p.rendered], failed: [...p.failed] };
    if (end.status === "succeeded") {
      next.pages += end.result.pages;
      next.rendered.push(end.result.document);
      this.ends.push(`${end.runId}:ok:${end.result.document}`);
    } else if (end.status === "failed") {
      next.failed.push(`${end.runId}:${end.error?.reason ?? end.message}`);
      this.ends.push(`${end.runId}:failed:${end.error?.reason}:${end.errorKind}`);
    } else {
      next.failed.push(`${end.runId}:cancelled`);
      this.ends.push(`${end.runId}:cancelled`);
    }
    const [head, ...rest] = next.pending;
    if (head === undefined) return ctx.succeed({ batch_id: p.batch_id, pages: next.pages, rendered: next.rendered, failed: next.failed });
    return ctx.workflows.documents.documentRender.child(head).onComplete(ctx.next.join, { ...next, pending: rest });
  }
}

interface App {
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle;
  batch: ReturnType<typeof batches.client>["batchRender"];
  stop(): Promise<void>;
}

async function open(store: ObjectStore, clock: MockClock, renders: Renders, batch: Batch): Promise<App> {
  const queue = await Queue.open(store, "family", {
    clock,
    flushIntervalMs: 1,
    queueConfigs: { "workflow-steps": { backoff: { baseMs: 1_000, maxMs: 1_000 } } },
  });
  const dispatcher = batches
    .registerWorkflows(documents.registerWorkflows(WorkflowDispatcher.builder(), { documentRender: renders }), { batchRender: batch })
    .build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook)
    .logger({ error: () => undefined, warn: () => undefined })
    .build();
  const worker = runtime.spawn();
  return {
    queue,
    runtime,
    worker,
    batch: batches.client(runtime).batchRender,
    async stop() {
      await worker.shutdown();
      await queue.close();
    },
  };
}

const stores: Array<[string, () => Promise<ObjectStore>]> = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
];

describe.each(stores)("typed child workflows over a %s", (_name, makeStore) => {
  it("the join is entered with each child's typed end once: results and a typed failure", async () => {
    const renders = new Renders();
    const batch = new Batch();
    const app = await open(await makeStore(), new MockClock(1_700_000_000_000), renders, batch);
    try {
      await app.batch.submit({ batch_id: "b1", documents: ["one", "bad-two", "three"] }, { runId: "b1" });
      const end = await app.batch.wait("b1");
      expect(end).toEqual({
        status: "succeeded",
        runId: "b1",
        finalStep: 3,
        result: { batch_id: "b1", pages: 8, rendered: ["one", "three"], failed: ["b1-s0-1:bad-two is unreadable"] },
      });
      expect(batch.ends).toEqual(["b1-s0-0:ok:one", "b1-s0-1:failed:bad-two is unreadable:runner", "b1-s0-2:ok:three"]);
      expect([...renders.count.entries()]).toEqual([
        ["b1-s0-0", 1],
        ["b1-s0-1", 1],
        ["b1-s0-2", 1],
      ]);
    } finally {
      await app.stop();
    }
  });

  it("a fan-out retried after starting its children starts each child once", async () => {
    const renders = new Renders();
    const batch = new Batch();
    batch.failOnce.add("b2");
    const clock = new MockClock(1_700_000_000_000);
    const app = await open(await makeStore(), clock, renders, batch);
    try {
      await app.batch.submit({ batch_id: "b2", documents: ["x", "y"] }, { runId: "b2" });
      // The retry waits out the backoff on the mock clock.
      await until("the fan-out runs twice", async () => {
        if (batch.fanOuts < 2) clock.advance(500);
        return (await app.batch.status("b2"))?.state === "terminated";
      });
      expect((await app.batch.wait("b2")).status).toBe("succeeded");
      expect(batch.fanOuts).toBe(2);
      expect([...renders.count.values()]).toEqual([1, 1]);
      const runs = await app.runtime.listRuns({ limit: 10 });
      expect(runs.runs.map((r) => r.runId).sort()).toEqual(["b2", "b2-s0-0", "b2-s0-1"]);
    } finally {
      await app.stop();
    }
  });

  it("a child cancelled from outside reaches the parent as cancelled; a cancelled parent cancels the children still running", async () => {
    const renders = new Renders();
    const batch = new Batch();
    const app = await open(await makeStore(), new MockClock(1_700_000_000_000), renders, batch);
    try {
      await app.batch.submit({ batch_id: "b3", documents: ["hold-a", "hold-b", "hold-c"] }, { runId: "b3" });
      await until("the children hold", () => renders.holding.size === 3);
      expect(await app.runtime.cancel("b3-s0-0")).toBe(true);
      await until("the join saw the cancel", () => batch.ends.length === 1);
      expect(batch.ends).toEqual(["b3-s0-0:cancelled"]);
      expect(await app.batch.cancel("b3")).toBe(true);
      expect((await app.batch.wait("b3")).status).toBe("cancelled");
      for (const id of ["b3-s0-1", "b3-s0-2"]) expect((await app.runtime.wait(id)).termination).toMatchObject({ status: "cancelled" });
      expect(batch.ends).toEqual(["b3-s0-0:cancelled"]);
      await until("the family's bookkeeping is gone", async () => (await app.queue.kvScan("workflow/signal-buf/")).entries.length === 0);
      expect((await app.queue.kvScan("workflow/children/")).entries).toEqual([]);
    } finally {
      await app.stop();
    }
  });

  it("children that end while the parent's runtime is stopped reach it once after the restart", async () => {
    const store = await makeStore();
    const clock = new MockClock(1_700_000_000_000);
    const renders = new Renders();
    const batch = new Batch();
    const first = await open(store, clock, renders, batch);
    await first.batch.submit({ batch_id: "b4", documents: ["hold-p", "q"] }, { runId: "b4" });
    await until(
      "the first child holds and the second ended",
      async () => renders.holding.size === 1 && (await first.runtime.status("b4-s0-1"))?.state === "terminated",
    );
    // Stopping cancels nothing: the held render is released by the shutdown's drain and ends the child.
    const stopping = first.stop();
    renders.holding.get("b4-s0-0")?.();
    await stopping;
    const second = await open(store, clock, renders, batch);
    try {
      const end = await second.batch.wait("b4");
      expect(end).toMatchObject({ status: "succeeded", result: { rendered: ["hold-p", "q"], failed: [] } });
      expect(batch.ends).toEqual(["b4-s0-0:ok:hold-p", "b4-s0-1:ok:q"]);
      expect(renders.count.get("b4-s0-0")).toBe(1);
    } finally {
      await second.stop();
    }
  });
});

describe("typed child workflow starts", () => {
  it("refuse an input the child's workflow rejects, starting nothing", async () => {
    const renders = new Renders();
    const batch = new Batch();
    const app = await open(new MemoryStore(), new MockClock(1_700_000_000_000), renders, batch);
    try {
      await app.batch.submit({ batch_id: "b5", documents: ["z".repeat(201)] }, { runId: "b5" });
      const end = await app.batch.wait("b5");
      expect(end.status).toBe("failed");
      expect(end.status === "failed" ? end.message : "").toMatch(
        /invalid documents.document.render input.*\n.*\/document: must NOT have more than 200 characters/,
      );
      expect(renders.count.size).toBe(0);
      expect((await app.runtime.listRuns({ limit: 10 })).runs.map((r) => r.runId)).toEqual(["b5"]);
    } finally {
      await app.stop();
    }
  });
});
