/**
 * KV effects: an order flow that keeps a status row in the queue's
 * key-value namespace, written in the same transaction as the run's own
 * transitions, so the row and the run can never disagree after a crash.
 *
 * Shows both surfaces:
 * - `RunSpec.effects`: the "received" row commits with the submission (a
 *   duplicate submission drops its effects);
 * - `step.effects`: each step stages the row's next value, applied by the
 *   settlement that commits the step's outcome, whichever it is (continue,
 *   succeed, or a runner's `fail`).
 * And what is not applied: a step that throws (here a transient payment
 * error) has its staged effects dropped; the retry reads the committed
 * row through `step.kv` and finds it unchanged. Values are absolute (a
 * whole row, not an increment) because a step can run more than once.
 *
 * Run: npx tsx examples/kv-effects.ts
 */
import { MemoryStore, NoopTerminalHook, Queue, SettlementEffects, StepError, StepOutcome, WorkflowRuntime, type StepRunner } from "taquba";

interface Order {
  id: string;
  item: string;
  inStock: boolean;
}
interface StatusRow {
  status: string;
  detail?: string;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;
const rowKey = (orderId: string) => `app/orders/${orderId}`;

let paymentCalls = 0;

const runner: StepRunner = {
  async runStep(step) {
    const order = dec<Order>(step.payload);
    const committed = await step.kv.get(rowKey(order.id));
    const row = committed ? dec<StatusRow>(committed).status : "none";
    console.log(`${order.id} step ${step.stepNumber} attempt ${step.attempt}: committed status row says "${row}"`);
    switch (step.stepNumber) {
      case 0:
        if (!order.inStock) {
          step.effects.put(rowKey(order.id), enc({ status: "rejected", detail: `${order.item} is out of stock` }));
          return StepOutcome.fail("out of stock");
        }
        step.effects.put(rowKey(order.id), enc({ status: "reserved" }));
        return StepOutcome.continueNow(step.payload);
      case 1:
        // Staged, then the step throws: nothing staged here is applied.
        step.effects.put(rowKey(order.id), enc({ status: "charging" }));
        if (++paymentCalls === 1) {
          console.log(
            `${order.id} step 1 attempt ${step.attempt}: payment gateway timed out; throwing a transient error (the staged "charging" row is dropped)`,
          );
          throw StepError.transient(new Error("payment gateway timed out"));
        }
        step.effects.put(rowKey(order.id), enc({ status: "paid" }));
        return StepOutcome.continueNow(step.payload);
      default:
        step.effects.put(rowKey(order.id), enc({ status: "shipped", detail: `tracking TRK-${order.id}` }));
        return StepOutcome.succeed(enc({ shipped: order.id }));
    }
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "kv-effects", { queueConfigs: { "workflow-steps": { backoff: { baseMs: 50, maxMs: 50 } } } });
const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();
const orders: Order[] = [
  { id: "o-1", item: "kettle", inStock: true },
  { id: "o-2", item: "toaster", inStock: false },
];
for (const order of orders) {
  const effects = new SettlementEffects().kvPut(rowKey(order.id), enc({ status: "received" }));
  await runtime.submit({ runId: order.id, input: enc(order), effects });
}
// A duplicate of an active run is a no-op, and its effects are dropped with it.
const dup = await runtime.submit({
  runId: "o-1",
  input: enc(orders[0]),
  effects: new SettlementEffects().kvPut(rowKey("o-1"), enc({ status: "received again" })),
});
console.log(`duplicate submission of o-1: newlySubmitted=${dup.newlySubmitted}, its effects dropped`);

const worker = runtime.spawn();

for (const order of orders) {
  const end = await runtime.wait(order.id);
  const row = dec<StatusRow>((await queue.view().kvGet(rowKey(order.id)))!);
  console.log(`${order.id} run ${end.termination.status}; status row ${rowKey(order.id)} = ${JSON.stringify(row)}`);
}
const page = await queue.view().kvScan("app/orders/");
console.log(`status rows: ${page.entries.map((e) => `${e.key}=${dec<StatusRow>(e.value).status}`).join(", ")}`);

await worker.shutdown();
await queue.close();
