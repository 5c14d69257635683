/**
 * @module The runtime's own view reading a run's records in the caller's
 * turn, as a wait and an outcome read do, in one built checkout: 50 active
 * runs (submitted with no worker: a run record and a step pointer each)
 * read as a wait's first round does (`phaseNow`), and 50 ended runs read as
 * a wait's end and an outcome read do (`stateNow`: no run record, the
 * terminal record's token, the record decoded once). REPS rounds of the
 * 100 reads after one untimed round, in a process of its own: under
 * callgrind, run it at two REPS; the difference of the counts over the
 * difference of the reads is the instructions per read (start-up taken
 * out), which a loaded machine leaves as they are. Without callgrind it
 * prints the CPU per read.
 *
 * Run: `npm run build` in each checkout, bundle this file
 * (`npx esbuild bench/view-run-reads.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/view-run-reads.mjs`),
 * then `REPS=2000 valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation bench/.out/view-run-reads.mjs <checkout>`
 * and again at REPS=6000; or `npx tsx bench/view-run-reads.ts <checkout>`.
 */
import { chainRunner, loadCheckout } from "./support/step-workload.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const REPS = Number(process.env.REPS ?? 2000);
const RUNS = 50;
const T = await loadCheckout(dir);

const store = new T.MemoryStore();
const queue = await T.Queue.open(store, "view-reads");
const runtime = T.WorkflowRuntime.builder(queue, store, chainRunner(T), T.NoopTerminalHook).build();
const enc = (s: string) => new TextEncoder().encode(s);
// Ended runs: one step each (the chain runner succeeds at the payload's last step).
const handle = runtime.spawn();
const ended: string[] = [];
for (let i = 0; i < RUNS; i++) {
  const { runId } = await runtime.submit({ input: enc("0/1") });
  await runtime.wait(runId);
  ended.push(String(runId));
}
await handle.shutdown();
// Active runs: submitted with no worker running.
const active: string[] = [];
for (let i = 0; i < RUNS; i++) active.push(String((await runtime.submit({ input: enc("0/1") })).runId));

/** The view's reads in the caller's turn (internal; the runtime's view lends its values). */
const view = runtime.view() as unknown as {
  phaseNow(runId: string): { kind: string } | undefined;
  stateNow(runId: string): { kind: string } | undefined;
};
let wrong = 0;
const round = () => {
  for (const id of active) if (view.phaseNow(id)?.kind !== "active") wrong++;
  for (const id of ended) if (view.stateNow(id)?.kind !== "terminated") wrong++;
};
round();
const cpu0 = process.cpuUsage();
for (let r = 0; r < REPS; r++) round();
const cpu = process.cpuUsage(cpu0);
const reads = REPS * 2 * RUNS;
if (wrong > 0) throw new Error(`${wrong} reads answered wrongly`);
console.log(`${dir}: REPS=${REPS}, ${reads} reads, ${(((cpu.user + cpu.system) * 1000) / reads).toFixed(0)} ns CPU per read`);
await queue.close();
