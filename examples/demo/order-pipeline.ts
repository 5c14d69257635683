/**
 * The demo's workflow and worker process: an order pipeline of four steps
 * (reserve, charge, documents, ship) whose side effects are memoized, with a
 * durable approval wait before shipping.
 *
 * Written with the runtime API directly (a `StepRunner`): the spec format of
 * the code generator describes jobs and signals, not multi-step workflows.
 */
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { LocalStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type Step, type StepRunner } from "taquba";

/** The queue store's name (its objects live under `demo/` in the directory) and the step queue's name. */
export const STORE_NAME = "demo";
export const QUEUE_NAME = "orders";
export const STEP_NAMES = ["reserve", "charge", "documents", "ship"] as const;
const DOCUMENTS = ["invoice", "packing-slip", "shipping-label"] as const;
const APPROVAL_TIMEOUT_MS = 30_000;

interface Order {
  id: string;
  item: string;
  quantity: number;
  amountCents: number;
}

export const ORDERS: readonly Order[] = [
  { id: "order-1001", item: "espresso grinder", quantity: 1, amountCents: 12900 },
  { id: "order-1002", item: "milk jug", quantity: 2, amountCents: 3800 },
];

/** What one step hands the next (the durable channel between steps). */
interface OrderState {
  order: Order;
  reservation?: string;
  charge?: string;
  documents?: string[];
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array): T => JSON.parse(new TextDecoder().decode(b)) as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const euros = (cents: number) => `EUR ${(cents / 100).toFixed(2)}`;

/** Where every real side effect is recorded, one line each: `<order> <what> <id>`. */
export function journalFile(dir: string): string {
  return join(dir, "side-effects.log");
}

/**
 * The order pipeline. Each expensive call goes through `step.memo`, so a
 * step delivered again (after a crash, a lease expiry or a retry) reuses
 * what an earlier delivery already did instead of doing it twice.
 */
class OrderPipeline implements StepRunner {
  constructor(
    private readonly say: (line: string) => void,
    private readonly journal: string,
    private readonly awaitingApproval: (orderId: string) => void,
    /** Process 1 only: the label service hangs, so the process is stuck mid-step when the demo kills it. */
    private readonly labelServiceHangs: boolean,
  ) {}

  /** Runs `compute` unless the step's memo already holds `key`; reports which happened. */
  async #once<T>(step: Step, key: string, compute: () => Promise<T>): Promise<{ value: T; reused: boolean }> {
    let ran = false;
    const value = await step.memo.memoized(key, async () => {
      ran = true;
      return compute();
    });
    return { value, reused: !ran };
  }

  #effect(order: Order, what: string, id: string): void {
    appendFileSync(this.journal, `${order.id} ${what} ${id}\n`);
  }

  async runStep(step: Step): Promise<StepOutcome> {
    const state = dec<OrderState>(step.payload);
    const { order } = state;
    const say = (text: string) => this.say(`${order.id} step ${step.stepNumber} ${STEP_NAMES[step.stepNumber]}: ${text}`);
    switch (step.stepNumber) {
      case 0: {
        const r = await this.#once(step, "reservation", async () => {
          await sleep(60);
          const id = `res-${randomUUID().slice(0, 6)}`;
          this.#effect(order, "reserve", id);
          return id;
        });
        say(`reserved ${order.quantity} x ${order.item} (${r.value})`);
        return StepOutcome.continueNow(enc({ ...state, reservation: r.value }));
      }
      case 1: {
        const r = await this.#once(step, "charge", async () => {
          await sleep(100);
          const id = `ch-${randomUUID().slice(0, 6)}`;
          this.#effect(order, "charge", id);
          return id;
        });
        say(`${r.reused ? "reused memo entry for the charge" : "charged"} ${euros(order.amountCents)} (${r.value})`);
        return StepOutcome.continueNow(enc({ ...state, charge: r.value }));
      }
      case 2: {
        const documents: string[] = [];
        for (const doc of DOCUMENTS) {
          const r = await this.#once(step, `document:${doc}`, async () => {
            if (doc === "shipping-label" && this.labelServiceHangs) {
              say("calling the label service... it hangs");
              await new Promise(() => undefined);
            }
            await sleep(150);
            const id = `${doc}-${randomUUID().slice(0, 6)}.pdf`;
            this.#effect(order, "render", id);
            return id;
          });
          say(r.reused ? `reused memo entry "document:${doc}" (${r.value}, rendered before the crash)` : `rendered ${doc} (${r.value})`);
          documents.push(r.value);
        }
        say(`waiting for the approval signal "approval:${order.id}" (timeout ${APPROVAL_TIMEOUT_MS / 1000} s); no worker is held while it waits`);
        this.awaitingApproval(order.id);
        return StepOutcome.continueOnSignal(enc({ ...state, documents }), `approval:${order.id}`, APPROVAL_TIMEOUT_MS);
      }
      default: {
        if (step.signal === null) return StepOutcome.fail("no approval before the timeout");
        const approval = dec<{ approved: boolean; by: string }>(step.signal!);
        if (!approval.approved) return StepOutcome.fail(`rejected by ${approval.by}`);
        const r = await this.#once(step, "shipment", async () => {
          await sleep(50);
          const id = `TRK${randomUUID().slice(0, 8).toUpperCase()}`;
          this.#effect(order, "ship", id);
          return id;
        });
        say(`approved by ${approval.by}; shipped ${state.documents?.length ?? 0} documents with tracking ${r.value}`);
        return StepOutcome.succeed(new TextEncoder().encode(`(charge ${state.charge}, tracking ${r.value})`));
      }
    }
  }
}

/**
 * One worker process. Process 1 submits the orders and works until it is
 * killed. Process 2 finds the runs where process 1 left them, resumes them,
 * approves order-1001 and cancels order-1002 while it awaits approval.
 */
export async function runWorkerProcess(dir: string, n: number): Promise<void> {
  const say = (line: string) => console.log(`[process ${n}] ${line}`);
  const store = new LocalStore(dir);
  const queue = await Queue.open(store, STORE_NAME);
  if (queue.recovery.requeued.length > 0) {
    say(`opened the queue: ${queue.recovery.requeued.length} step the killed process held is claimable again`);
  }

  const pending = new Map<string, (orderId: string) => void>();
  const runner = new OrderPipeline(say, journalFile(dir), (orderId) => pending.get(orderId)?.(orderId), n === 1);
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).queueName(QUEUE_NAME).maxConcurrentSteps(1).build();

  for (const order of ORDERS) {
    const before = await runtime.status(order.id);
    // Submitting is idempotent on (run id, input): process 2 resubmits and nothing changes.
    const submitted = await runtime.submit({ runId: order.id, input: enc({ order }) });
    if (submitted.newlySubmitted) say(`submitted ${order.id}: ${order.quantity} x ${order.item}, ${euros(order.amountCents)}`);
    else if (before !== null && before.state !== "terminated") {
      const skipped = STEP_NAMES.slice(0, before.step);
      say(`${order.id} resubmitted: already in flight (a no-op); resumes at step ${before.step} ${STEP_NAMES[before.step]}, skipping committed steps ${skipped.join(", ")}`);
    }
  }

  if (n === 2) {
    // The "humans": an approver answers order-1001, and order-1002's customer cancels.
    pending.set("order-1001", (id) => {
      setTimeout(() => {
        runtime
          .signal(`approval:${id}`, enc({ approved: true, by: "ops@example.com" }))
          .then((r) => say(`ops approved ${id}: signal ${r}`), (e: unknown) => say(`signal failed: ${String(e)}`));
      }, 200);
    });
    pending.set("order-1002", (id) => {
      setTimeout(() => {
        runtime.cancel(id).then((r) => say(`customer cancelled ${id} while it awaited approval: ${r ? "cancelled" : "too late"}`), (e: unknown) => say(`cancel failed: ${String(e)}`));
      }, 200);
    });
  }

  const worker = runtime.spawn();
  for (const order of ORDERS) {
    const end = await runtime.wait(order.id);
    say(`${order.id} ended: ${end.termination.status}${end.termination.error ? ` (${end.termination.error})` : ""} at step ${end.termination.finalStep}`);
  }
  await worker.shutdown();
  await queue.close();
}
