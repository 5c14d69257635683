/**
 * Parent and child workflows: a batch fans out one child workflow per
 * document and joins their typed results.
 *
 * Shows: `starts:` in `parent-child/batches.taquba.yaml` lets the batch's
 * steps start `document.render` of another package (`documents`) as child
 * runs through `ctx.workflows.documents.documentRender.start(...)`, and
 * `waits_for_child:` makes `join` a step entered with a child's typed end:
 * `child.onComplete(ctx.next.join, payload)`. The join waits for the
 * children one after another; a child that ended earlier is delivered at
 * once, so the batch takes as long as its slowest child. The fan-out fails
 * once after starting its children and is retried: the children's run ids
 * are derived from the batch's run id and the step, so the retry finds
 * them instead of starting them again. A corrupt document's child fails
 * with its typed error, which the batch receives as such. A second batch is
 * cancelled while its children wait, and its children are cancelled with it.
 *
 * Run: npx tsx examples/parent-child.ts
 */
import { JobRunner, MemoryStore, Queue, StepError } from "taquba";
import { batches, documents } from "./parent-child/generated/index.js";

const renders = new Map<string, number>();
/** Documents whose rendering waits until released (for the cancelled batch). */
const held = new Map<string, () => void>();

class DocumentRender implements documents.DocumentRenderHandler {
  async render(p: documents.DocumentRenderInput, ctx: documents.DocumentRenderRenderContext): Promise<documents.DocumentRenderRenderTransition> {
    renders.set(ctx.runId, (renders.get(ctx.runId) ?? 0) + 1);
    if (p.document.startsWith("slow-")) {
      // Waits until released or cancelled: a stand-in for a long render.
      await new Promise<void>((resolve) => {
        held.set(ctx.runId, resolve);
        ctx.cancelSignal.addEventListener("abort", () => resolve(), { once: true });
      });
      if (ctx.cancelSignal.aborted) return ctx.cancel("the batch was cancelled");
    }
    if (p.document.includes("corrupt")) return ctx.fail({ reason: `${p.document} has no readable pages` });
    return ctx.succeed({ document: p.document, pages: (p.document.length % 5) + 1 });
  }
}

let failedOnce = false;

class BatchRender implements batches.BatchRenderHandler {
  async fanOut(p: batches.BatchRenderInput, ctx: batches.BatchRenderFanOutContext): Promise<batches.BatchRenderFanOutTransition> {
    const children = [];
    for (const document of p.documents) {
      // The key names the child within this step; with the run id and step it makes the child's run id.
      const child = await ctx.workflows.documents.documentRender.start({ document }, { key: document.replace(/[^A-Za-z0-9_-]/g, "_") });
      children.push(child);
    }
    const fresh = children.filter((c) => c.newlyStarted).length;
    console.log(`${p.batch_id} fan_out attempt ${ctx.attempt}: ${fresh} children started, ${children.length - fresh} found from an earlier attempt`);
    if (p.batch_id === "batch-1" && !failedOnce) {
      failedOnce = true;
      throw StepError.transient(new Error("lost the connection after starting the children"));
    }
    const [first, ...rest] = children;
    return first!.onComplete(ctx.next.join, { batch_id: p.batch_id, pending: rest.map((c) => c.runId), pages: 0, rendered: [], failed: [] });
  }

  async join(p: batches.BatchRenderJoinPayload, ctx: batches.BatchRenderJoinContext): Promise<batches.BatchRenderJoinTransition> {
    const end = ctx.signal;
    const acc = { ...p, rendered: [...p.rendered], failed: [...p.failed] };
    if (end.status === "succeeded") {
      acc.pages += end.result.pages;
      acc.rendered.push(end.result.document);
      console.log(`${p.batch_id} join: child ${end.runId} rendered ${end.result.document} (${end.result.pages} pages)`);
    } else if (end.status === "failed") {
      acc.failed.push(end.error?.reason ?? end.message);
      console.log(`${p.batch_id} join: child ${end.runId} failed: ${end.error?.reason ?? end.message}`);
    } else {
      acc.failed.push(`${end.runId} cancelled`);
      console.log(`${p.batch_id} join: child ${end.runId} was cancelled`);
    }
    const [next, ...rest] = acc.pending;
    if (next === undefined) return ctx.succeed({ batch_id: p.batch_id, pages: acc.pages, rendered: acc.rendered, failed: acc.failed });
    return ctx.workflows.documents.documentRender.child(next).onComplete(ctx.next.join, { ...acc, pending: rest });
  }
}

const store = new MemoryStore();
const queue = await Queue.open(store, "parent-child", { queueConfigs: { jobs: { backoff: { baseMs: 50, maxMs: 50 } } } });
const builder = JobRunner.builder(queue, store);
batches.registerWorkflows(documents.registerWorkflows(builder, { documentRender: new DocumentRender() }), { batchRender: new BatchRender() });
const runner = builder.build();
const worker = runner.spawn();
const batch = batches.client(runner).batchRender;

// Batch 1: four documents, one corrupt; the fan-out is retried once.
await batch.submit({ batch_id: "batch-1", documents: ["intro.md", "chapter-1.md", "corrupt-scan.pdf", "appendix.md"] }, { runId: "batch-1" });
const end = await batch.wait("batch-1");
if (end.status !== "succeeded") throw new Error(`batch-1 ended ${end.status}`);
console.log(`batch-1 succeeded: ${end.result.pages} pages from ${end.result.rendered.join(", ")}; failed: ${end.result.failed.join("; ")}`);
const children = [...renders.keys()].filter((id) => id.startsWith("batch-1-"));
console.log(`batch-1 children: ${children.length}, each rendered ${[...new Set(children.map((id) => renders.get(id)))].join("/")} time(s)`);

// Batch 2: its children hold; cancelling the batch cancels them.
await batch.submit({ batch_id: "batch-2", documents: ["slow-a.md", "slow-b.md"] }, { runId: "batch-2" });
while (held.size < 2) await new Promise((r) => setTimeout(r, 5));
await batch.cancel("batch-2");
console.log(`batch-2 ${(await batch.wait("batch-2")).status}`);
for (const id of ["batch-2-s0-slow-a_md", "batch-2-s0-slow-b_md"]) {
  const child = await runner.runtime.wait(id);
  console.log(`child ${id}: ${child.termination.status}`);
}

await worker.shutdown();
await queue.close();
