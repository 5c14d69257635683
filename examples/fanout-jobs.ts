/**
 * Fan-out jobs: a workflow step fans out typed jobs, awaits them all and
 * memoizes the joined result.
 *
 * Shows: a `WorkflowRuntime` and a `JobRunner` sharing one queue (each on
 * its own queue name); the step submits one `photo.resize` job per photo and
 * width through the generated client (`fanout-jobs/generated`, from
 * `fanout-jobs/thumbs.taquba.yaml`: a wrong field is a compile error and a
 * bad value a `ValidationError` before anything is enqueued). The job's
 * idempotency key (`resize:{photo}:{width}`) makes the fan-out safe to
 * retry: the first attempt of the step fails half-way through submitting,
 * and the retry's submissions of the jobs that already exist collapse onto
 * them (`newlySubmitted: false`) instead of resizing twice. The joined
 * result is memoized, so a later redelivery of the step reads it back
 * without touching the jobs.
 *
 * Run: npx tsx examples/fanout-jobs.ts
 */
import { JobRunner, MemoryStore, NoopTerminalHook, Queue, StepError, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";
import { thumbs } from "./fanout-jobs/generated/index.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array | undefined): T => JSON.parse(new TextDecoder().decode(b)) as T;

let resizes = 0;

/** The job's handler, typed by the generated interface. */
class PhotoResize implements thumbs.PhotoResizeHandler {
  async run(input: thumbs.PhotoResizeInput): Promise<thumbs.PhotoResizeOutput> {
    await new Promise((r) => setTimeout(r, 30));
    resizes++;
    console.log(`  job: resized ${input.photo} to ${input.width} px`);
    return { object_key: `thumbs/${input.width}/${input.photo}`, bytes: input.width * 37 };
  }
}

const store = new MemoryStore();
const queue = await Queue.open(store, "fanout", { queueConfigs: { "workflow-steps": { backoff: { baseMs: 50, maxMs: 500 } } } });
const jobs = thumbs.register(JobRunner.builder(queue, store), { photoResize: new PhotoResize() }).build();
const client = thumbs.client(jobs);

interface Joined {
  thumbnails: string[];
  totalBytes: number;
}

/** Step 0 fans out and joins; step 1 publishes the album. */
const album: StepRunner = {
  async runStep(step) {
    if (step.stepNumber === 1) {
      const joined = dec<Joined>(step.payload);
      console.log(`step 1: published the album with ${joined.thumbnails.length} thumbnails`);
      return StepOutcome.succeed(step.payload);
    }
    const photos = dec<string[]>(step.payload);
    console.log(`step 0 attempt ${step.attempt}: fanning out ${photos.length * 2} resize jobs`);
    const joined = await step.memo.memoized("joined", async (): Promise<Joined> => {
      const handles = [];
      let fresh = 0;
      for (const photo of photos) {
        for (const width of [320, 1280] as const) {
          const h = await client.photoResize.submit({ photo, width }, {});
          if (h.newlySubmitted) fresh++;
          handles.push(h);
          if (step.attempt === 1 && handles.length === 3) {
            console.log(`  step 0 attempt 1: connection lost after submitting 3 jobs; the step is retried`);
            throw StepError.transient(new Error("connection lost"));
          }
        }
      }
      console.log(`  step 0 attempt ${step.attempt}: ${handles.length} submissions, ${fresh} new, ${handles.length - fresh} matched existing jobs by idempotency key`);
      const outputs = await Promise.all(handles.map((h) => h.result()));
      const thumbnails = outputs.map((o) => (o.status === "succeeded" ? o.output.object_key : `missing (${o.status})`));
      return { thumbnails, totalBytes: outputs.reduce((n, o) => n + (o.status === "succeeded" ? o.output.bytes : 0), 0) };
    });
    console.log(`  step 0 attempt ${step.attempt}: joined ${joined.thumbnails.length} thumbnails (${joined.totalBytes} bytes), memoized`);
    return StepOutcome.continueNow(enc(joined));
  },
};

const runtime = WorkflowRuntime.builder(queue, store, album, NoopTerminalHook).build();
const jobWorker = jobs.spawn();
const stepWorker = runtime.spawn();

const { runId } = await runtime.submit({ runId: "album-summer", input: enc(["beach.jpg", "harbour.jpg", "sunset.jpg"]) });
const end = await runtime.wait(runId);
const result = dec<Joined>(end.outcome?.result);
console.log(`run ${runId} ${end.termination.status}: ${result.thumbnails.join(", ")}`);
console.log(`fanout-jobs done: ${resizes} resize jobs ran for ${result.thumbnails.length} thumbnails despite the retried fan-out`);

// A wrong value never reaches the queue: the generated client validates it first.
await client.photoResize.submit({ photo: "not a photo", width: 320 }, {}).catch((e: unknown) => console.log(`rejected before enqueueing: ${e instanceof Error ? e.message.replace(/\s*\n\s*/g, " ") : String(e)}`));

await stepWorker.shutdown();
await jobWorker.shutdown();
await queue.close();
