/**
 * The demo: an order pipeline that survives `kill -9`.
 *
 * Shows, over a local directory (the `LocalStore`), everything that makes a
 * run durable: a four-step workflow (reserve stock, charge the card, render
 * the documents, ship) declared in YAML (`demo/shop.taquba.yaml`) and
 * implemented against the generated typed code, its expensive calls
 * memoized; a worker process killed with SIGKILL in the middle of a step; a
 * fresh process that resumes every run at its last committed step,
 * skipping the committed steps and reusing the memo entries of the
 * interrupted one; an approval that the workflow waits for as a durable,
 * typed signal (sent here by the demo itself); and a cancellation of a run
 * while it waits.
 *
 * The demo runs itself three times: this process orchestrates, and two
 * child processes (`demo.ts --worker <dir> <n>`) host the runtime. Every
 * real side effect (a charge, a rendered document, a shipment) is appended
 * to a journal file, so the end of the demo can count them: a charge is
 * made once per order even though a process died with work in flight.
 *
 * Run: npm run demo   (add --keep to keep the state directory)
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ORDERS, STEP_NAMES, journalFile, readBack, runWorkerProcess } from "./demo/order-pipeline.js";

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === "--worker") {
  await runWorkerProcess(process.argv[3]!, Number(process.argv[4]));
  process.exit(0);
}

const started = Date.now();
const keep = process.argv.includes("--keep");
const dir = await mkdtemp(join(tmpdir(), "taquba-demo-"));
const say = (line: string) => console.log(`[demo]      ${line}`);

say(`state directory: ${dir} (a LocalStore: the queue, run records and memo entries live there)`);
say(`orders: ${ORDERS.map((o) => o.order_id).join(", ")}; typed workflow shop.order.pipeline: ${STEP_NAMES.join(" -> ")}`);

/** Starts a worker process; `onLine` sees each line it prints. Resolves with its exit code or signal. */
function startWorker(n: number, onLine: (line: string) => void) {
  const child = spawn(process.execPath, [...process.execArgv, self, "--worker", dir, String(n)], { stdio: ["ignore", "pipe", "inherit"] });
  createInterface({ input: child.stdout }).on("line", (line) => {
    console.log(line);
    onLine(line);
  });
  const exited = new Promise<string>((resolve) => child.on("exit", (code, sig) => resolve(sig ?? `exit code ${code}`)));
  return { child, exited };
}

// Process 1: submits the orders and works until we kill it, in the middle of rendering
// order-1001's documents (two of its three documents rendered and memoized, the call for
// the third one hanging). A hung call is where an operator reaches for kill -9; it also
// makes the kill point the same on every run of the demo.
let killedAt = "";
const p1 = startWorker(1, (line) => {
  if (killedAt === "" && line.includes("order-1001") && line.includes("it hangs")) {
    killedAt = line;
    p1.child.kill("SIGKILL");
  }
});
// A safety net: the kill point is reached in about a second; never hang if it is not.
const guard = setTimeout(() => p1.child.kill("SIGKILL"), 20_000);
const p1End = await p1.exited;
clearTimeout(guard);
if (killedAt === "") throw new Error("worker process 1 never reached the kill point");
if (p1End !== "SIGKILL") throw new Error(`worker process 1 ended with ${p1End} before the demo could kill it`);
say(`killed worker process 1 (pid ${p1.child.pid}) with SIGKILL in the middle of a step`);

// Process 2: a fresh process over the same directory resumes where the runs stood.
const p2 = startWorker(2, () => undefined);
const p2End = await p2.exited;
if (p2End !== "exit code 0") throw new Error(`worker process 2 ended with ${p2End}`);

// Read the results back from the directory, as any later process could: the typed client
// reports each run's end with its typed result or error.
for (const { orderId, end } of await readBack(dir)) {
  if (end === null) throw new Error(`${orderId} did not end`);
  const detail =
    end.status === "succeeded"
      ? ` (charge ${end.result.charge_id}, tracking ${end.result.tracking_number})`
      : end.status === "failed"
        ? ` (${end.error?.reason ?? end.message})`
        : " (cancelled from outside the run)";
  say(`read back from the directory: ${orderId} ${end.status} at step ${end.finalStep}${detail}`);
}

const journal = (await readFile(journalFile(dir), "utf8"))
  .trim()
  .split("\n")
  .map((l) => l.split(" "));
const count = (what: string, order: string) => journal.filter(([o, w]) => o === order && w === what).length;
for (const { order_id: id } of ORDERS) {
  say(`${id}: side effects performed: charge x${count("charge", id)}, documents x${count("render", id)}, shipment x${count("ship", id)}`);
}
const charges = ORDERS.map((o) => count("charge", o.order_id));
const renders = ORDERS.map((o) => count("render", o.order_id));
if (charges.some((c) => c !== 1) || renders.some((r) => r !== 3)) throw new Error("a side effect ran twice: durability is broken");

if (keep) say(`state kept in ${dir}`);
else await rm(dir, { recursive: true, force: true });
console.log(
  `demo finished in ${((Date.now() - started) / 1000).toFixed(1)} s: 1 process killed with SIGKILL, every charge and document made exactly once, order-1001 approved and shipped, order-1002 cancelled while awaiting approval`,
);
