/**
 * Fan-out jobs: a typed workflow step fans out typed jobs on its own
 * runtime, awaits them all and memoizes the joined result.
 *
 * Shows: one runtime for jobs and workflows. `JobRunner.builder(queue,
 * store)` registers the `photo.resize` job and the `album.publish` workflow
 * (both generated into `fanout-jobs/generated` from
 * `fanout-jobs/thumbs.taquba.yaml`), so job steps and workflow steps run on
 * one step queue and one worker. The `fan_out` step submits one resize job
 * per photo and width through `thumbs.client(ctx.jobs)`: a wrong field is a
 * compile error and a bad value a `ValidationError` before anything is
 * enqueued. Each job's idempotency key is derived from the run id, the photo
 * and the width, which makes the fan-out safe to retry: the step's first
 * attempt fails half-way through submitting, and the retry's submissions of
 * the jobs that already exist collapse onto them (`newlySubmitted: false`)
 * instead of resizing twice. The joined result is memoized in the step's
 * memo, so a redelivery after the join reads it back without touching the
 * jobs, then `publish` ends the run with it.
 *
 * The step holds a worker slot while it waits for its jobs, which is fine
 * for a handful; to wait without holding one, submit with `notifySignal`
 * and continue on that signal (see the README, "Typed workflows").
 *
 * Run: npx tsx examples/fanout-jobs.ts
 */
import { JobRunner, MemoryStore, Queue, StepError } from "taquba";
import { thumbs } from "./fanout-jobs/generated/index.js";

const STEPS = "thumbs-steps";
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

/** The workflow's steps, typed by the generated interface: `fan_out` continues to `publish` only. */
class AlbumPublish implements thumbs.AlbumPublishHandler {
  async fanOut(input: thumbs.AlbumPublishInput, ctx: thumbs.AlbumPublishFanOutContext): Promise<thumbs.AlbumPublishFanOutTransition> {
    const jobs = thumbs.client(ctx.jobs);
    console.log(`fan_out attempt ${ctx.attempt}: fanning out ${input.photos.length * 2} resize jobs`);
    const joined = await ctx.memo.memoized("joined", async (): Promise<thumbs.Thumbnails> => {
      const handles = [];
      let fresh = 0;
      for (const photo of input.photos) {
        for (const width of [320, 1280] as const) {
          // Keyed by the run: a retried step finds the job it submitted before.
          const h = await jobs.photoResize.submit({ photo, width }, { idempotencyKey: `${ctx.runId}:${photo}:${width}` });
          if (h.newlySubmitted) fresh++;
          handles.push(h);
          if (ctx.attempt === 1 && handles.length === 3) {
            console.log(`  fan_out attempt 1: connection lost after submitting 3 jobs; the step is retried`);
            throw StepError.transient(new Error("connection lost"));
          }
        }
      }
      console.log(
        `  fan_out attempt ${ctx.attempt}: ${handles.length} submissions, ${fresh} new, ${handles.length - fresh} matched existing jobs by idempotency key`,
      );
      const outputs = await Promise.all(handles.map((h) => h.output()));
      return { album: input.album, thumbnails: outputs.map((o) => o.object_key), total_bytes: outputs.reduce((n, o) => n + o.bytes, 0) };
    });
    console.log(`  fan_out attempt ${ctx.attempt}: joined ${joined.thumbnails.length} thumbnails (${joined.total_bytes} bytes), memoized`);
    return ctx.next.publish(joined);
  }

  async publish(p: thumbs.AlbumPublishPublishPayload, ctx: thumbs.AlbumPublishPublishContext): Promise<thumbs.AlbumPublishPublishTransition> {
    console.log(`publish: published album ${p.album} with ${p.thumbnails.length} thumbnails`);
    return ctx.succeed(p);
  }
}

const store = new MemoryStore();
const queue = await Queue.open(store, "fanout", { queueConfigs: { [STEPS]: { backoff: { baseMs: 50, maxMs: 500 } } } });
// One builder, one runtime: the job and the workflow share the step queue and the worker.
const builder = JobRunner.builder(queue, store).queueName(STEPS);
thumbs.register(builder, { photoResize: new PhotoResize() });
thumbs.registerWorkflows(builder, { albumPublish: new AlbumPublish() });
const runner = builder.build();
const worker = runner.spawn();
// The runner hosts both halves of the package's client: jobs and workflows.
const client = thumbs.client(runner);

const { runId } = await client.albumPublish.submit({ album: "summer", photos: ["beach.jpg", "harbour.jpg", "sunset.jpg"] }, { runId: "album-summer" });
const end = await client.albumPublish.wait(runId);
if (end.status !== "succeeded") throw new Error(`run ${runId} ended ${end.status}`);
console.log(`run ${runId} ${end.status}: ${end.result.thumbnails.join(", ")}`);
console.log(`fanout-jobs done: ${resizes} resize jobs ran for ${end.result.thumbnails.length} thumbnails despite the retried fan-out`);

// A wrong value never reaches the queue: the generated client validates it first.
await client.photoResize
  .submit({ photo: "not a photo", width: 320 })
  .catch((e: unknown) => console.log(`rejected before enqueueing: ${e instanceof Error ? e.message.replace(/\s*\n\s*/g, " ") : String(e)}`));

await worker.shutdown();
await queue.close();
