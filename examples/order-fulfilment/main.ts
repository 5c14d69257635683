/**
 * Order fulfilment: a typed four-step workflow declared in YAML
 * (`schemas/orders.taquba.yaml`: reserve -> await_payment -> pack -> ship),
 * implemented by `order-fulfil.ts` against the project's generated code
 * (`generated/orders`, from `npm run codegen`), over a local-directory store.
 *
 * Submits five orders, restarts the process's runtime (a new queue over the
 * same directory) while they wait for their payments, then delivers payment
 * signals through the generated client, cancels one order, lets one wait
 * time out, and prints how each run ended: a typed result or a typed error.
 *
 * The queue runs on a `MockClock` held still until the payments are sent,
 * then moved along with the wall clock: however slow the machine is at
 * restarting, a paid order's payment window cannot close before its
 * payment arrives, and the unpaid one still times out.
 *
 * Run: npx tsx examples/order-fulfilment/main.ts [store-dir]
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalStore, MockClock, NoopTerminalHook, Queue, WorkflowDispatcher, WorkflowRuntime } from "taquba";
import { orders } from "../../generated/index.js";
import { OrderFulfil } from "./order-fulfil.js";

const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), "taquba-orders-"));
const store = new LocalStore(dir);
const headers = { tenant_id: "acme" };
const clock = new MockClock(Date.now());
const handler = new OrderFulfil({ paymentWaitMs: 400, pickupDelayMs: 150, log: (line) => console.log(`  ${line}`) });

/** Opens the queue over the directory and starts a runtime whose one step runner dispatches typed workflows. */
async function start() {
  const queue = await Queue.open(store, "orders", { clock, queueConfigs: { "workflow-steps": { backoff: { baseMs: 50, maxMs: 200 } } } });
  // Workflows of any number of spec packages register on one dispatcher; here, one package.
  const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: handler }).build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).build();
  return { queue, runtime, worker: runtime.spawn(), fulfil: orders.client(runtime).orderFulfil };
}

const order = (id: string, sku: string, totalCents: number): orders.OrderFulfilInput => ({
  order_id: id,
  lines: [{ sku, quantity: 1 }],
  total_cents: totalCents,
});
const ids = ["o-100", "o-101", "o-102", "o-103", "o-104"];

console.log(`store: ${dir}`);
let app = await start();
await app.fulfil.submit(order("o-100", "BOOK", 2_500), { headers, runId: "o-100" });
await app.fulfil.submit(order("o-101", "LAMP", 4_000), { headers, runId: "o-101" });
await app.fulfil.submit(order("o-102", "DESK", 9_900), { headers, runId: "o-102" });
await app.fulfil.submit(order("o-103", "SOLD-OUT", 100), { headers, runId: "o-103" });
await app.fulfil.submit(order("o-104", "PEN", 300), { headers, runId: "o-104" });
console.log("submitted 5 orders; restarting while they wait for payments");

// A restart: in-flight steps finish, the queue closes, and a new one opens over the same directory.
await app.worker.shutdown();
await app.queue.close();
app = await start();

// Payments arrive through the generated, validated signal sender. A signal that
// comes before its run waits is buffered and consumed when the run gets there.
await app.fulfil.signals.paymentReceived({ order_id: "o-100" }, { amount_cents: 2_500, provider_ref: "psp-81" });
await app.fulfil.signals.paymentReceived({ order_id: "o-101" }, { amount_cents: 1_000, provider_ref: "psp-82" });
await app.fulfil.cancel("o-104");
// o-102 gets no payment: its wait times out once time moves on.
const ticking = setInterval(() => clock.advance(10), 10);

console.log("run ends:");
for (const id of ids) {
  const end = await app.fulfil.wait(id);
  if (end.status === "succeeded") console.log(`${id}: succeeded, tracking ${end.result.tracking_number}, paid ${end.result.paid_cents} cents`);
  else if (end.status === "failed") console.log(`${id}: failed, ${end.error === undefined ? end.message : `${end.error.reason} (${end.error.detail ?? ""})`}`);
  else console.log(`${id}: cancelled`);
}

clearInterval(ticking);
await app.worker.shutdown();
await app.queue.close();
if (process.argv[2] === undefined) rmSync(dir, { recursive: true, force: true });
