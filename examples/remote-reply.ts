/**
 * Remote reply: a step hands work to another machine and the run continues
 * when the reply lands in the bucket, with no inbound endpoint on this
 * process and no lease held while the remote work runs.
 *
 * Shows: the requesting step chooses a reply key in the object store,
 * records a pending marker (`app/pending-replies/<run>` holding the reply
 * key and the correlation key), sends the request (here over a pipe to a
 * second process standing in for another machine) and returns
 * `StepOutcome.continueOnSignal`. The remote side writes its reply at the
 * reply key. A watcher in this process scans the pending markers, and when
 * a reply object has appeared it delivers it as the signal
 * (`runtime.signal`) and deletes the marker. The markers are in the store,
 * so a restarted process resumes watching where it stopped; a reply that
 * arrives before the wait is registered is buffered, not lost.
 *
 * Run: npx tsx examples/remote-reply.ts
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type ObjectStore, type StepRunner } from "taquba";

const PENDING_PREFIX = "app/pending-replies/";
const REPLY_TIMEOUT_MS = 30_000;
const WATCH_INTERVAL_MS = 50;

interface PendingMarker {
  replyKey: string;
  correlationKey: string;
}
interface RemoteRequest {
  replyKey: string;
  text: string;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;

// ---- the other machine ----------------------------------------------------

/** Reads requests from stdin, does the work and writes each reply at its reply key. */
async function remoteMachine(dir: string): Promise<void> {
  const bucket = new LocalStore(dir);
  for await (const line of createInterface({ input: process.stdin })) {
    const req = JSON.parse(line) as RemoteRequest;
    await new Promise((r) => setTimeout(r, 150)); // the remote work
    const words = req.text.split(/\s+/).filter(Boolean).length;
    await bucket.put(req.replyKey, enc({ words, shouted: req.text.toUpperCase() }));
    console.log(`[remote]    wrote reply ${req.replyKey} (${words} word${words === 1 ? "" : "s"})`);
  }
}

if (process.argv[2] === "--remote") {
  await remoteMachine(process.argv[3]!);
  process.exit(0);
}

// ---- this machine ---------------------------------------------------------

const dir = await mkdtemp(join(tmpdir(), "taquba-remote-reply-"));
const say = (line: string) => console.log(`[this host] ${line}`);
const remote = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--remote", dir], { stdio: ["pipe", "inherit", "inherit"] });
const remoteExited = new Promise<number | null>((resolve) => remote.on("exit", resolve));

const store: ObjectStore = new LocalStore(dir);

/** Step 0 sends the request and waits for the reply; step 1 uses it. */
const runner: StepRunner = {
  async runStep(step) {
    if (step.stepNumber === 0) {
      const replyKey = `app/replies/${step.runId}.json`;
      const correlationKey = `reply:${step.runId}`;
      // Marker first: a reply can only be delivered if the watcher knows whom it is for.
      // A redelivered step rewrites the same marker and resends the same request (same reply key).
      await store.put(`${PENDING_PREFIX}${step.runId}`, enc({ replyKey, correlationKey } satisfies PendingMarker));
      remote.stdin!.write(`${JSON.stringify({ replyKey, text: new TextDecoder().decode(step.payload) } satisfies RemoteRequest)}\n`);
      say(`${step.runId}: sent the request, reply expected at ${replyKey}; the step settles now`);
      return StepOutcome.continueOnSignal(step.payload, correlationKey, REPLY_TIMEOUT_MS);
    }
    if (!step.signal) return StepOutcome.fail("no reply before the timeout");
    const reply = dec<{ words: number; shouted: string }>(step.signal);
    say(`${step.runId}: continued on the reply: ${reply.words} word${reply.words === 1 ? "" : "s"}`);
    return StepOutcome.succeed(enc(reply));
  },
};

const queue = await Queue.open(store, "remote-reply");
const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();

/** Turns each reply object that has appeared into its signal; scans the pending markers on a timer. */
async function watchReplies(signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    for await (const { key } of store.list(PENDING_PREFIX)) {
      const marker = await store.get(key);
      if (marker === null) continue;
      const { replyKey, correlationKey } = dec<PendingMarker>(marker.body);
      const reply = await store.get(replyKey);
      if (reply === null) continue;
      const outcome = await runtime.signal(correlationKey, reply.body);
      // Signal first, then clean up: a crash in between sends the signal again after the
      // restart (at least once); a run that already moved on never waits on its key again.
      await store.delete(key);
      await store.delete(replyKey);
      say(`watcher: reply for ${correlationKey} appeared; signal ${outcome}`);
    }
    await new Promise((r) => setTimeout(r, WATCH_INTERVAL_MS));
  }
}

const stopWatching = new AbortController();
const watcher = watchReplies(stopWatching.signal);
const worker = runtime.spawn();
const texts = ["the quick brown fox", "durable execution on object storage", "hello"];
const ids: string[] = [];
for (const [i, text] of texts.entries()) ids.push(String((await runtime.submit({ runId: `summary-${i + 1}`, input: new TextEncoder().encode(text) })).runId));
for (const id of ids) {
  const end = await runtime.wait(id);
  const r = end.outcome?.result ? dec<{ shouted: string }>(end.outcome.result) : undefined;
  say(`${id} ${end.termination.status}: "${r?.shouted}"`);
}
stopWatching.abort();
await watcher;
await worker.shutdown();
await queue.close();
remote.stdin!.end();
await remoteExited;
await rm(dir, { recursive: true, force: true });
console.log(`remote-reply done: ${ids.length} runs continued on replies written by another process`);
