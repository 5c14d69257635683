/**
 * The demo's workflow and worker process: the typed workflow
 * `shop.order.pipeline` (declared in `shop.taquba.yaml`: reserve -> charge
 * -> documents -> ship, where ship waits for the `approval` signal),
 * implemented against the code `taquba codegen` generated into `generated/`.
 * Each handler method returns a transition built from its context
 * (`ctx.next.<step>`), so a transition the spec does not declare, or a wrong
 * payload, does not compile; every expensive call goes through `ctx.memo`.
 */
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { LocalStore, NoopTerminalHook, Queue, WorkflowDispatcher, WorkflowRuntime, type Memo } from "taquba";
import { shop } from "./generated/index.js";

/** The queue store's name (its objects live under `demo/` in the directory). */
export const STORE_NAME = "demo";
export const STEP_NAMES = ["reserve", "charge", "documents", "ship"] as const;
const DOCUMENTS = ["invoice", "packing-slip", "shipping-label"] as const;

export const ORDERS: readonly shop.Order[] = [
  { order_id: "order-1001", item: "espresso grinder", quantity: 1, amount_cents: 12900 },
  { order_id: "order-1002", item: "milk jug", quantity: 2, amount_cents: 3800 },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const euros = (cents: number) => `EUR ${(cents / 100).toFixed(2)}`;

/** Where every real side effect is recorded, one line each: `<order> <what> <id>`. */
export function journalFile(dir: string): string {
  return join(dir, "side-effects.log");
}

/**
 * The handlers of `shop.order.pipeline`, one method per step. A step
 * delivered again (after a crash, a lease expiry or a retry) finds what an
 * earlier delivery did in the step's memo instead of doing it twice.
 */
class OrderPipeline implements shop.OrderPipelineHandler {
  constructor(
    private readonly say: (line: string) => void,
    private readonly journal: string,
    private readonly awaitingApproval: (orderId: string) => void,
    /** Process 1 only: the label service hangs, so the process is stuck mid-step when the demo kills it. */
    private readonly labelServiceHangs: boolean,
  ) {}

  /** Runs `compute` unless the memo already holds `key`; reports which happened. */
  async #once<T>(memo: Memo, key: string, compute: () => Promise<T>): Promise<{ value: T; reused: boolean }> {
    let ran = false;
    const value = await memo.memoized(key, async () => {
      ran = true;
      return compute();
    });
    return { value, reused: !ran };
  }

  #effect(order: shop.Order, what: string, id: string): void {
    appendFileSync(this.journal, `${order.order_id} ${what} ${id}\n`);
  }

  #log(order: shop.Order, ctx: { stepNumber: number; stepName: string }, text: string): void {
    this.say(`${order.order_id} step ${ctx.stepNumber} ${ctx.stepName}: ${text}`);
  }

  async reserve(order: shop.OrderPipelineInput, ctx: shop.OrderPipelineReserveContext): Promise<shop.OrderPipelineReserveTransition> {
    const r = await this.#once(ctx.memo, "reservation", async () => {
      await sleep(60);
      const id = `res-${randomUUID().slice(0, 6)}`;
      this.#effect(order, "reserve", id);
      return id;
    });
    this.#log(order, ctx, `reserved ${order.quantity} x ${order.item} (${r.value})`);
    return ctx.next.charge({ order, reservation_id: r.value });
  }

  async charge(p: shop.OrderPipelineChargePayload, ctx: shop.OrderPipelineChargeContext): Promise<shop.OrderPipelineChargeTransition> {
    const r = await this.#once(ctx.memo, "charge", async () => {
      await sleep(100);
      const id = `ch-${randomUUID().slice(0, 6)}`;
      this.#effect(p.order, "charge", id);
      return id;
    });
    this.#log(p.order, ctx, `${r.reused ? "reused memo entry for the charge" : "charged"} ${euros(p.order.amount_cents)} (${r.value})`);
    return ctx.next.documents({ order: p.order, charge_id: r.value });
  }

  async documents(p: shop.OrderPipelineDocumentsPayload, ctx: shop.OrderPipelineDocumentsContext): Promise<shop.OrderPipelineDocumentsTransition> {
    const documents: string[] = [];
    for (const doc of DOCUMENTS) {
      const r = await this.#once(ctx.memo, `document:${doc}`, async () => {
        if (doc === "shipping-label" && this.labelServiceHangs) {
          this.#log(p.order, ctx, "calling the label service... it hangs");
          await new Promise(() => undefined);
        }
        await sleep(150);
        const id = `${doc}-${randomUUID().slice(0, 6)}.pdf`;
        this.#effect(p.order, "render", id);
        return id;
      });
      this.#log(p.order, ctx, r.reused ? `reused memo entry "document:${doc}" (${r.value}, rendered before the crash)` : `rendered ${doc} (${r.value})`);
      documents.push(r.value);
    }
    this.#log(p.order, ctx, `waiting for the approval signal "approval:${p.order.order_id}" (timeout 30 s); no worker is held while it waits`);
    this.awaitingApproval(p.order.order_id);
    return ctx.next.ship.onSignal({ order_id: p.order.order_id }, { order: p.order, charge_id: p.charge_id, documents });
  }

  async ship(p: shop.OrderPipelineShipPayload, ctx: shop.OrderPipelineShipContext): Promise<shop.OrderPipelineShipTransition> {
    if (ctx.signal === null) return ctx.fail({ reason: "approval_timeout" });
    if (!ctx.signal.approved) return ctx.fail({ reason: "rejected", detail: `by ${ctx.signal.by}` });
    const by = ctx.signal.by;
    const r = await this.#once(ctx.memo, "shipment", async () => {
      await sleep(50);
      const id = `TRK${randomUUID().slice(0, 8).toUpperCase()}`;
      this.#effect(p.order, "ship", id);
      return id;
    });
    this.#log(p.order, ctx, `approved by ${by}; shipped ${p.documents.length} documents with tracking ${r.value}`);
    return ctx.succeed({ order_id: p.order.order_id, charge_id: p.charge_id, tracking_number: r.value });
  }
}

/** Opens the queue over `dir` and a runtime whose step runner dispatches the typed workflow. */
export async function openShop(dir: string, handler: shop.OrderPipelineHandler) {
  const store = new LocalStore(dir);
  const queue = await Queue.open(store, STORE_NAME);
  const dispatcher = shop.registerWorkflows(WorkflowDispatcher.builder(), { orderPipeline: handler }).build();
  const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).maxConcurrentSteps(1).build();
  return { queue, runtime, pipeline: shop.client(runtime).orderPipeline };
}

/** How each order's run ended, read from the directory by a process that runs no worker. */
export async function readBack(dir: string) {
  const { queue, pipeline } = await openShop(
    dir,
    new OrderPipeline(
      () => undefined,
      journalFile(dir),
      () => undefined,
      false,
    ),
  );
  try {
    return await Promise.all(ORDERS.map(async (o) => ({ orderId: o.order_id, end: await pipeline.result(o.order_id) })));
  } finally {
    await queue.close();
  }
}

/**
 * One worker process. Process 1 submits the orders and works until it is
 * killed. Process 2 finds the runs where process 1 left them, resumes them,
 * approves order-1001 and cancels order-1002 while it awaits approval.
 */
export async function runWorkerProcess(dir: string, n: number): Promise<void> {
  const say = (line: string) => console.log(`[process ${n}] ${line}`);
  const pending = new Map<string, (orderId: string) => void>();
  const handler = new OrderPipeline(say, journalFile(dir), (orderId) => pending.get(orderId)?.(orderId), n === 1);
  const { queue, runtime, pipeline } = await openShop(dir, handler);
  if (queue.recovery.requeued.length > 0) {
    say(`opened the queue: ${queue.recovery.requeued.length} step the killed process held is claimable again`);
  }

  for (const order of ORDERS) {
    const before = await pipeline.status(order.order_id);
    // Submitting is idempotent on (run id, input): process 2 resubmits and nothing changes.
    const submitted = await pipeline.submit(order, { runId: order.order_id });
    if (submitted.newlySubmitted) say(`submitted ${order.order_id}: ${order.quantity} x ${order.item}, ${euros(order.amount_cents)}`);
    else if (before !== null && before.state !== "terminated") {
      const skipped = STEP_NAMES.slice(0, before.step);
      say(
        `${order.order_id} resubmitted: already in flight (a no-op); resumes at step ${before.step} ${STEP_NAMES[before.step]}, skipping committed steps ${skipped.join(", ")}`,
      );
    }
  }

  if (n === 2) {
    // The "humans": an operator approves order-1001, and order-1002's customer cancels.
    pending.set("order-1001", (id) => {
      setTimeout(() => {
        pipeline.signals.approval({ order_id: id }, { approved: true, by: "ops@example.com" }).then(
          (r) => say(`ops approved ${id}: signal ${r}`),
          (e: unknown) => say(`signal failed: ${String(e)}`),
        );
      }, 200);
    });
    pending.set("order-1002", (id) => {
      setTimeout(() => {
        pipeline.cancel(id).then(
          (r) => say(`customer cancelled ${id} while it awaited approval: ${r ? "cancelled" : "too late"}`),
          (e: unknown) => say(`cancel failed: ${String(e)}`),
        );
      }, 200);
    });
  }

  const worker = runtime.spawn();
  for (const order of ORDERS) {
    const end = await pipeline.wait(order.order_id);
    const detail = end.status === "failed" ? ` (${end.error?.reason ?? end.message})` : "";
    say(`${order.order_id} ended: ${end.status}${detail} at step ${end.finalStep}`);
  }
  await worker.shutdown();
  await queue.close();
}
