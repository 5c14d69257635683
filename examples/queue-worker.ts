/**
 * Queue worker: the task queue under the workflow runtime, used directly.
 *
 * Shows: `Queue.open` over a store; `enqueue` with a priority, a delayed
 * `runAt` and a `dedupKey` (a second enqueue with the key while the first
 * job waits returns it instead of adding one); an enqueue whose
 * `SettlementEffects` write a caller KV row in the same commit; `runWorker`
 * with a `Worker` that acknowledges (returning effects applied with the
 * ack), throws to retry with the queue's backoff, or throws
 * `PermanentError` to dead-letter; and the views: `stats`, `deadJobs` and
 * `kvGet`. Settings such as the attempt limit and the backoff are per queue
 * name (`queueConfigs`).
 *
 * Run: npx tsx examples/queue-worker.ts
 */
import { MemoryStore, PermanentError, Queue, SettlementEffects, runWorker, type ClaimedJob, type Worker } from "taquba";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;

interface Email {
  to: string;
  kind: "receipt" | "newsletter";
}

const store = new MemoryStore();
const queue = await Queue.open(store, "mail", {
  queueConfigs: { emails: { maxAttempts: 3, backoff: { baseMs: 30, maxMs: 200 } } },
});

// Lower priority values are claimed first: receipts before newsletters.
await queue.enqueue("emails", enc({ to: "a@example.com", kind: "newsletter" } satisfies Email), { priority: 2000 });
await queue.enqueue("emails", enc({ to: "b@example.com", kind: "receipt" } satisfies Email), { priority: 10 });
await queue.enqueue("emails", enc({ to: "c@example.com", kind: "receipt" } satisfies Email), { priority: 10, runAt: Date.now() + 150 });
const first = await queue.enqueue("emails", enc({ to: "flaky@example.com", kind: "receipt" } satisfies Email), { dedupKey: "receipt:flaky" });
const dup = await queue.enqueue("emails", enc({ to: "flaky@example.com", kind: "receipt" } satisfies Email), { dedupKey: "receipt:flaky" });
console.log(`dedup: second enqueue returned job ${dup.jobId === first.jobId ? "the same" : "another"} job, newlyEnqueued=${dup.newlyEnqueued}`);
// The job and an application row commit together, or neither does.
await queue.enqueueWithEffects(
  "emails",
  enc({ to: "nobody@invalid", kind: "receipt" } satisfies Email),
  {},
  new SettlementEffects().kvPut("app/outbox/nobody@invalid", enc({ state: "queued" })),
);
console.log(`stats before the worker: ${JSON.stringify(await queue.view().stats("emails"))}`);

let flakyAttempts = 0;
let finished = 0;
let allFinished: () => void = () => undefined;
const done = new Promise<void>((r) => (allFinished = r));
/** Counts a job that will not be retried; the loop below stops after the fifth. */
const finish = () => ++finished === 5 && setImmediate(allFinished);

const mailer: Worker = {
  async process(job: ClaimedJob) {
    const email = dec<Email>(job.payload);
    if (email.to.endsWith("@invalid")) {
      console.log(`attempt ${job.attempt}: ${email.to} is not deliverable; dead-lettering`);
      finish();
      throw new PermanentError(`no mail server for ${email.to}`, {
        effects: new SettlementEffects().kvPut(`app/outbox/${email.to}`, enc({ state: "undeliverable" })),
      });
    }
    if (email.to.startsWith("flaky") && ++flakyAttempts < 3) {
      console.log(`attempt ${job.attempt}: ${email.to} timed out; retrying after the backoff`);
      throw new Error("SMTP timeout");
    }
    console.log(`attempt ${job.attempt}: sent ${email.kind} to ${email.to}`);
    finish();
    return new SettlementEffects().kvPut(`app/outbox/${email.to}`, enc({ state: "sent" }));
  },
};

const stop = new AbortController();
const worker = runWorker(queue, "emails", mailer, { concurrency: 1, signal: stop.signal });
await done;
stop.abort();
await worker; // settles the jobs still in flight

const view = queue.view();
console.log(`stats after: ${JSON.stringify(await view.stats("emails"))}`);
for (const dead of await view.deadJobs("emails")) console.log(`dead job ${dead.id}: ${dead.lastError}`);
const outbox = await view.kvScan("app/outbox/");
console.log(`outbox rows: ${outbox.entries.map((e) => `${e.key.slice("app/outbox/".length)}=${dec<{ state: string }>(e.value).state}`).join(", ")}`);
await queue.close();
