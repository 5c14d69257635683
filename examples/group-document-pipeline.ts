/**
 * Group document pipeline: a job group over many documents, each going
 * through memoized stages, with a progress line and a cost roll-up kept by
 * the caller.
 *
 * Shows: the `document.process` job (declared in
 * `group-document-pipeline/docs.taquba.yaml`, generated into
 * `group-document-pipeline/generated`) runs extract, classify and validate
 * for one document, memoizing each stage with its cost in the job's memo
 * (`jobContext(ctx).delivery.memo`). `JobRunner.group` submits the whole
 * batch as one durable set (members keyed by the job's idempotency key
 * `doc:{doc_id}`), and `JobGroup.results()` streams each document's typed
 * result as it ends; progress, failure counts and the cost roll-up are
 * folds the caller writes over that stream. One document hits a transient
 * model error and is retried: its extract stage is reused from the memo
 * and billed once. One document is empty and fails with a typed error
 * (`ctx.fail`), which is not retried.
 *
 * Run: npx tsx examples/group-document-pipeline.ts
 */
import { JobRunner, MemoryStore, Queue, jobContext, type Memo } from "taquba";
import { docs } from "./group-document-pipeline/generated/index.js";

const CATEGORIES = ["invoice", "contract", "letter"] as const;
const DOCUMENTS = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const usd = (micro: number) => `$${(micro / 1e6).toFixed(6)}`;

/** One stage's memoized value and what it cost when it ran. */
interface Staged<T> {
  value: T;
  cost: number;
}

/** Runs a stage unless the job's memo holds it; the cost is stored with the value, so a retry is not billed twice. */
async function stage<T>(memo: Memo, name: string, cost: number, compute: () => Promise<T>): Promise<Staged<T> & { reused: boolean }> {
  let reused = true;
  const s = await memo.memoized<Staged<T>>(name, async () => {
    reused = false;
    return { value: await compute(), cost };
  });
  return { ...s, reused };
}

const overloadedOnce = new Set<string>();

class DocumentProcess implements docs.DocumentProcessHandler {
  async run(input: docs.DocumentProcessInput, ctx: docs.DocumentProcessContext): Promise<docs.DocumentProcessOutput> {
    const { memo } = jobContext(ctx).delivery;
    const extract = await stage(memo, "extract", 40 * input.pages, async () => {
      await sleep(10 + input.pages);
      return { words: input.pages * 310 };
    });
    if (extract.reused) console.log(`  ${input.doc_id}: attempt ${ctx.attempt} reuses the extract stage from the memo (not billed again)`);
    if (extract.value.words === 0) ctx.fail({ reason: "empty", cost_micro_usd: extract.cost });
    const classify = await stage(memo, "classify", 900, async () => {
      await sleep(15);
      if (input.doc_id === "doc-007" && !overloadedOnce.has(input.doc_id)) {
        overloadedOnce.add(input.doc_id);
        console.log(`  ${input.doc_id}: classifier overloaded on attempt ${ctx.attempt}; the job is retried`);
        throw new Error("classifier overloaded");
      }
      return CATEGORIES[input.pages % CATEGORIES.length]!;
    });
    const validate = await stage(memo, "validate", 150, async () => {
      await sleep(5);
      return true;
    });
    return {
      doc_id: input.doc_id,
      category: classify.value,
      words: extract.value.words,
      cost_micro_usd: extract.cost + classify.cost + validate.cost,
    };
  }
}

const store = new MemoryStore();
const queue = await Queue.open(store, "intake", { queueConfigs: { jobs: { backoff: { baseMs: 50, maxMs: 500 } } } });
const runner = docs.register(JobRunner.builder(queue, store).concurrency(4), { documentProcess: new DocumentProcess() }).build();
const worker = runner.spawn();

const inputs: docs.DocumentProcessInput[] = Array.from({ length: DOCUMENTS }, (_, i) => ({
  doc_id: `doc-${String(i + 1).padStart(3, "0")}`,
  pages: i + 1 === 13 ? 0 : ((i * 7) % 11) + 1,
}));
const group = runner.group("intake-2026-11-29", docs.documentProcessJob);
const submitted = await group.submit(inputs, { headers: { batch_id: "intake-2026-11-29" } });
console.log(`submitted group ${submitted.groupId}: ${submitted.submitted} documents`);

// The caller's folds over the stream of results: progress, failures, cost, categories.
let done = 0;
let failed = 0;
let cost = 0;
const byCategory = new Map<string, number>();
for await (const r of group.results()) {
  done++;
  if (r.outcome.status === "succeeded") {
    cost += r.outcome.output.cost_micro_usd;
    byCategory.set(r.outcome.output.category, (byCategory.get(r.outcome.output.category) ?? 0) + 1);
  } else {
    failed++;
    const err = r.outcome.status === "failed" ? r.outcome.error : undefined;
    cost += err?.cost_micro_usd ?? 0;
    console.log(`  ${r.key}: ${r.outcome.status}${err ? ` (${err.reason})` : ""}`);
  }
  if (done % 5 === 0 || done === DOCUMENTS)
    console.log(`progress ${done}/${DOCUMENTS}: ${done - failed} succeeded, ${failed} failed, cost so far ${usd(cost)}`);
}
const status = await group.status();
console.log(`group status: ${JSON.stringify(status)}`);
console.log(`categories: ${[...byCategory].map(([c, n]) => `${c} ${n}`).join(", ")}`);
console.log(`group-document-pipeline done: ${DOCUMENTS} documents, ${failed} failed, total cost ${usd(cost)}`);

await worker.shutdown();
await queue.close();
