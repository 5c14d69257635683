/**
 * LLM agent: a two-step research-then-write agent whose every model call is
 * memoized, so a retried or redelivered step never pays for a call twice.
 *
 * Shows: step 0 researches (one model call per sub-question) and hands its
 * notes to step 1 through the continue payload; step 1 outlines, then
 * drafts. The draft call is rate limited once: the step throws
 * `StepError.transient`, the runtime retries it after the queue's backoff,
 * and the retry finds the outline in the step's memo
 * (`memo.memoizedByContent`, keyed by the call's input) instead of calling
 * the model again. Before each slow call the step extends its lease
 * (`step.lease.ensureAtLeast`), so a slow model does not get the step
 * delivered twice.
 *
 * The "model" is a deterministic local stand-in (no network, no keys): it
 * composes its answer from the prompt, so the output is the same on every
 * run. Replace `LocalModel.complete` with a real client call.
 *
 * Run: npx tsx examples/llm-agent.ts
 */
import { createHash } from "node:crypto";
import { MemoryStore, NoopTerminalHook, Queue, StepError, StepOutcome, WorkflowRuntime, type Step, type StepRunner } from "taquba";

const MODEL_TIMEOUT_MS = 30_000;

/** A stand-in for a hosted model: deterministic, a little slow, rate limited once. */
class LocalModel {
  calls = 0;
  tokens = 0;
  #rateLimitedOnce = false;

  async complete(kind: string, prompt: string): Promise<string> {
    await new Promise((r) => setTimeout(r, 40));
    if (kind === "draft" && !this.#rateLimitedOnce) {
      this.#rateLimitedOnce = true;
      throw new Error("429 rate limited: retry later");
    }
    this.calls++;
    const digest = createHash("sha256").update(prompt).digest();
    const facts = ["is stored in a bucket", "resumes after a crash", "memoizes expensive calls", "waits on durable signals", "needs no database"];
    const answer = `${prompt.split(":")[0]} ${facts[digest[0]! % facts.length]}`;
    this.tokens += prompt.split(/\s+/).length + answer.split(/\s+/).length;
    console.log(`  model call ${this.calls} (${kind}): "${answer}"`);
    return answer;
  }
}

interface Research {
  topic: string;
  notes: string[];
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array | undefined): T => JSON.parse(new TextDecoder().decode(b)) as T;

function agent(model: LocalModel): StepRunner {
  /** One memoized model call: the memo key is the hash of (operation, prompt). */
  const call = async (step: Step, kind: string, prompt: string): Promise<string> => {
    let called = false;
    const text = await step.memo.memoizedByContent({ operation: kind, prompt }, async () => {
      called = true;
      await step.lease.ensureAtLeast(MODEL_TIMEOUT_MS);
      return model.complete(kind, prompt);
    });
    if (!called) console.log(`  memo hit (${kind}): the retry reuses "${text}"`);
    return text;
  };
  return {
    async runStep(step) {
      if (step.stepNumber === 0) {
        const topic = new TextDecoder().decode(step.payload);
        console.log(`step 0 research "${topic}" (attempt ${step.attempt})`);
        const notes: string[] = [];
        for (const q of ["what", "why", "how"]) notes.push(await call(step, "research", `${topic}: ${q}?`));
        return StepOutcome.continueNow(enc({ topic, notes } satisfies Research));
      }
      const r = dec<Research>(step.payload);
      console.log(`step 1 write (attempt ${step.attempt})`);
      const outline = await call(step, "outline", `${r.topic}: outline from ${r.notes.join("; ")}`);
      try {
        const draft = await call(step, "draft", `${r.topic}: draft from ${outline}`);
        return StepOutcome.succeed(enc({ title: r.topic, body: `${r.notes.join(". ")}. ${draft}.` }));
      } catch (e) {
        console.log(`  draft call failed (${e instanceof Error ? e.message : String(e)}); the step is retried`);
        throw StepError.transient(e);
      }
    },
  };
}

const model = new LocalModel();
const store = new MemoryStore();
const queue = await Queue.open(store, "agent", { queueConfigs: { "workflow-steps": { backoff: { baseMs: 100, maxMs: 1000 } } } });
const runtime = WorkflowRuntime.builder(queue, store, agent(model), NoopTerminalHook).build();
const worker = runtime.spawn();

const { runId } = await runtime.submit({ runId: "article-1", input: new TextEncoder().encode("Durable agents") });
const end = await runtime.wait(runId);
const article = dec<{ title: string; body: string }>(end.outcome?.result);
console.log(`run ${runId} ${end.termination.status}: "${article.title}: ${article.body}"`);
console.log(
  `llm-agent done: ${model.calls} model calls (${model.tokens} tokens) for 5 answers; the retried step called the model only for what it had not memoized`,
);

await worker.shutdown();
await queue.close();
