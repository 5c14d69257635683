/**
 * Durable approvals: an agent proposes actions and each run pauses until a
 * human decides, across a process restart.
 *
 * Shows the three ways a signal reaches a waiting step, over a local
 * directory shared by two processes:
 * - signal: the run waits (`StepOutcome.continueOnSignal`), the first
 *   process exits, and the second process delivers the decision; the wait
 *   is a scheduled job in the store, so it survived the restart and held no
 *   worker meanwhile;
 * - timeout: no decision arrives, the timeout fires and the next step sees
 *   `step.signal === null` (escalation);
 * - buffered: the decision is sent before the run even exists; it is kept
 *   durably under its correlation key and consumed when the run registers
 *   its wait, in the next process.
 * It also discards an unwanted buffered decision with `clearSignal`.
 *
 * The signal is typed: its key template and payload schema are declared in
 * `durable-approvals/approvals.taquba.yaml`, and the generated client
 * (`durable-approvals/generated`, from `taquba codegen`) builds the key and
 * validates the payload; the runner decodes it with the same definition.
 *
 * Run: npx tsx examples/durable-approvals.ts
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";
import { approvals } from "./durable-approvals/generated/index.js";

const SHORT_TIMEOUT_MS = 1500;
const LONG_TIMEOUT_MS = 60_000;

interface Proposal {
  request_id: string;
  action: string;
  timeoutMs: number;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;

/** Step 0 proposes and waits for the decision; step 1 acts on it. */
function approvalGate(say: (line: string) => void, waiting: (id: string) => void): StepRunner {
  return {
    async runStep(step) {
      const p = dec<Proposal>(step.payload);
      if (step.stepNumber === 0) {
        const key = approvals.decisionSignal.key({ request_id: p.request_id });
        say(`${p.request_id}: agent proposes "${p.action}"; waiting for "${key}" (timeout ${p.timeoutMs / 1000} s)`);
        waiting(p.request_id);
        return StepOutcome.continueOnSignal(step.payload, key, p.timeoutMs);
      }
      if (step.signal === null || step.signal === undefined) {
        say(`${p.request_id}: no decision before the timeout; escalating`);
        return StepOutcome.fail("no decision before the timeout: escalated to on-call");
      }
      const d = approvals.decisionSignal.decode(step.signal);
      if (!d.approved) return StepOutcome.fail(`rejected by ${d.by}${d.comment ? `: ${d.comment}` : ""}`);
      say(`${p.request_id}: approved by ${d.by}; performing "${p.action}"`);
      return StepOutcome.succeed(enc({ done: p.action, approvedBy: d.by }));
    },
  };
}

async function open(dir: string, say: (line: string) => void, waiting: (id: string) => void = () => undefined) {
  const store = new LocalStore(dir);
  const queue = await Queue.open(store, "approvals");
  const runtime = WorkflowRuntime.builder(queue, store, approvalGate(say, waiting), NoopTerminalHook).build();
  return { queue, runtime, decide: approvals.client(runtime).signals.decision };
}

/** Process 1: proposes three actions, buffers an early decision, and exits while the runs wait. */
async function processOne(dir: string): Promise<void> {
  const say = (line: string) => console.log(`[process 1] ${line}`);
  let waits = 0;
  let allWaiting: () => void = () => undefined;
  const waitingDone = new Promise<void>((r) => (allWaiting = r));
  const { queue, runtime, decide } = await open(dir, say, () => ++waits === 3 && allWaiting());
  const worker = runtime.spawn();
  const proposals: Proposal[] = [
    { request_id: "refund-42", action: "refund order 42 (EUR 80)", timeoutMs: LONG_TIMEOUT_MS },
    { request_id: "delete-tenant-7", action: "delete tenant 7", timeoutMs: LONG_TIMEOUT_MS },
    { request_id: "rotate-keys", action: "rotate the signing keys", timeoutMs: SHORT_TIMEOUT_MS },
  ];
  for (const p of proposals) await runtime.submit({ runId: p.request_id, input: enc(p) });
  // Sent before its run exists: kept under the correlation key for the next waiter.
  say(`decision for "upgrade-db" (not proposed yet): ${await decide({ request_id: "upgrade-db" }, { approved: true, by: "dba@example.com" })}`);
  await waitingDone;
  await worker.shutdown(); // lets the three steps settle their waits
  for (const p of proposals) say(`${p.request_id}: ${(await runtime.status(p.request_id))?.state} at step 1 (a scheduled step in the store)`);
  await queue.close();
  say("exiting with three runs waiting");
}

/** Process 2: decides on the waiting runs, proposes the action whose decision is buffered, lets one time out. */
async function processTwo(dir: string): Promise<void> {
  const say = (line: string) => console.log(`[process 2] ${line}`);
  const { queue, runtime, decide } = await open(dir, say);
  const worker = runtime.spawn();
  say(`refund-42 after the restart: ${(await runtime.status("refund-42"))?.state} at step 1`);
  say(`approve refund-42: ${await decide({ request_id: "refund-42" }, { approved: true, by: "finance@example.com" })}`);
  say(
    `reject delete-tenant-7: ${await decide({ request_id: "delete-tenant-7" }, { approved: false, by: "cto@example.com", comment: "tenant has an open contract" })}`,
  );
  await runtime.submit({ runId: "upgrade-db", input: enc({ request_id: "upgrade-db", action: "upgrade the database", timeoutMs: LONG_TIMEOUT_MS }) });
  say(
    `decision for "old-request": ${await decide({ request_id: "old-request" }, { approved: true, by: "someone" })}; withdrawn: ${await runtime.clearSignal("approval:old-request")}`,
  );
  for (const id of ["refund-42", "delete-tenant-7", "upgrade-db", "rotate-keys"]) {
    const end = await runtime.wait(id);
    say(`${id}: ${end.termination.status}${end.termination.error ? ` (${end.termination.error})` : ""}`);
  }
  await worker.shutdown();
  await queue.close();
}

if (process.argv[2] === "--process") {
  const [, , , dir, n] = process.argv;
  await (n === "1" ? processOne(dir!) : processTwo(dir!));
  process.exit(0);
}

const dir = await mkdtemp(join(tmpdir(), "taquba-approvals-"));
for (const n of [1, 2]) {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--process", dir, String(n)], { stdio: "inherit" });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0) throw new Error(`process ${n} exited with ${code}`);
}
await rm(dir, { recursive: true, force: true });
console.log("durable-approvals done: signal, buffered and timeout paths each crossed a process restart");
