/**
 * One runtime hosting typed jobs and typed workflows of several spec
 * packages (jobs of `billing` and `media`, the `orders` workflow) over one
 * step queue and one worker, on a memory store with a mock clock:
 * - a workflow step submits a `billing` job through `ctx.jobs` (with the
 *   generated client), the worker is stopped and the queue reopened while
 *   the job waits for its retry, and a later step of the same run joins the
 *   job's output (memoized) after the restart;
 * - a runner attached to a hand-built runtime (`JobRunner.over`), child jobs
 *   from a job handler, and the errors of an unattached or twice-attached
 *   dispatcher;
 * - untyped runs share the runtime through the fallback runner, submitted
 *   and awaited through the runner;
 * - registration mistakes are refused before anything runs.
 */

import { describe, expect, it } from "vitest";
import {
  JobRunner,
  JobsAlreadyAttachedError,
  JobsNotAttachedError,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  Step,
  StepError,
  StepOutcome,
  ValidationError,
  WorkflowDispatcher,
  WorkflowRuntime,
  jobContext,
  type ObjectStore,
  type RunnerHandle,
} from "taquba";
import { encodeStepEnvelope } from "taquba/generated";
import { until, useOpenApps } from "../workflow/helpers.js";
import { billing, media, orders } from "../../generated/index.js";

const HOUR = 3_600_000;
const PICKUP_DELAY_MS = 2 * HOUR;
const STEPS = "shop-steps";
const headers = { tenant_id: "acme" };

/** What ran, in order. */
type Journal = string[];

/** The order workflow: reserve submits the invoice job; pack joins its output. */
class OrderFulfil implements orders.OrderFulfilHandler {
  constructor(private readonly journal: Journal) {}

  async reserve(input: orders.OrderFulfilInput, ctx: orders.OrderFulfilReserveContext): Promise<orders.OrderFulfilReserveTransition> {
    this.journal.push(`reserve#${ctx.attempt}`);
    // A job from another spec package, submitted through the same runtime with its generated client.
    // The run memo keeps the job id, so a retried reserve (or pack) finds the same job.
    const jobId = await ctx.runMemo.memoized("invoice-job", async () => {
      const lines = input.lines.map((l) => ({ sku: l.sku, quantity: l.quantity, unit_price: { amount_cents: 500, currency: "EUR" as const } }));
      const handle = await billing
        .client(ctx.jobs)
        .invoiceRender.submit({ invoice_id: input.order_id, lines }, { headers: { tenant_id: ctx.headers.tenant_id } });
      return handle.jobId;
    });
    this.journal.push(`invoice job ${jobId}`);
    return ctx.next.awaitPayment.onSignal(
      { order_id: input.order_id },
      { order_id: input.order_id, reservation_id: `res-${input.order_id}`, total_cents: input.total_cents },
    );
  }

  async awaitPayment(p: orders.OrderFulfilAwaitPaymentPayload, ctx: orders.OrderFulfilAwaitPaymentContext): Promise<orders.OrderFulfilAwaitPaymentTransition> {
    this.journal.push(`await_payment#${ctx.attempt}`);
    if (ctx.signal === null) return ctx.fail({ reason: "payment_timeout" });
    return ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: ctx.signal.amount_cents });
  }

  async pack(p: orders.OrderFulfilPackPayload, ctx: orders.OrderFulfilPackContext): Promise<orders.OrderFulfilPackTransition> {
    this.journal.push(`pack#${ctx.attempt}`);
    const jobId = await ctx.runMemo.memoized<string>("invoice-job", () => Promise.reject(new Error("reserve left no invoice job")));
    // The join: wait for the job on this runtime, memoized so a retried pack does not wait again.
    const invoice = await ctx.memo.memoized("invoice", () => ctx.jobs.handle(billing.invoiceRenderJob, jobId).output());
    this.journal.push(`joined ${invoice.object_key}`);
    return ctx.next.ship.after(PICKUP_DELAY_MS, { order_id: p.order_id, parcel_id: invoice.object_key, paid_cents: p.paid_cents });
  }

  async ship(p: orders.OrderFulfilShipPayload, ctx: orders.OrderFulfilShipContext): Promise<orders.OrderFulfilShipTransition> {
    this.journal.push(`ship#${ctx.attempt}`);
    return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: `TRK-${p.parcel_id}` });
  }
}

/** Billing jobs; the renderer is down on the first attempt of each invoice. */
function billingHandlers(journal: Journal): billing.Handlers {
  return {
    emailSend: { run: async (input) => ({ message_id: `msg-${input.to}` }) },
    invoiceRender: {
      async run(input, ctx) {
        journal.push(`invoice.render#${ctx.attempt}`);
        if (ctx.attempt === 1) throw new Error("renderer answered 503");
        const cents = input.lines.reduce((sum, l) => sum + l.quantity * l.unit_price.amount_cents, 0);
        return { object_key: `invoices/${input.invoice_id}.pdf`, total: { amount_cents: cents, currency: "EUR" } };
      },
    },
  };
}

const mediaHandlers: media.Handlers = {
  imageThumbnail: { run: async (input) => ({ thumbnails: Object.fromEntries(input.sizes.map((s) => [String(s), `${input.object_key}@${s}`])) }) },
  imageScan: { run: async () => ({ verdict: "clean" as const, detail: null }) },
};

interface App {
  queue: Queue;
  runner: JobRunner;
  worker: RunnerHandle;
}

const { track, stop } = useOpenApps<App>();

/** Opens (or reopens: a restart) the queue over `store` and starts one runner hosting all three packages. */
async function start(store: ObjectStore, clock: MockClock, journal: Journal): Promise<App> {
  const queue = await Queue.open(store, "shop", { clock, flushIntervalMs: 1, queueConfigs: { [STEPS]: { backoff: { baseMs: 1000, maxMs: 1000 } } } });
  const builder = JobRunner.builder(queue, store)
    .queueName(STEPS)
    .logger({ error: () => undefined });
  billing.register(builder, billingHandlers(journal));
  media.register(builder, mediaHandlers);
  orders.registerWorkflows(builder, { orderFulfil: new OrderFulfil(journal) });
  const runner = builder.build();
  const app = { queue, runner, worker: runner.spawn() };
  return track(app);
}

const order = (id: string): orders.OrderFulfilInput => ({ order_id: id, lines: [{ sku: "BOOK", quantity: 2 }], total_cents: 1_000 });

describe("typed jobs and typed workflows of several packages on one runtime", () => {
  it("a workflow step submits a job of another package; a later step joins its output after a restart", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const journal: Journal = [];
    let app = await start(store, clock, journal);
    expect(app.runner.runtime.queueName).toBe(STEPS);
    // The runner is the workflows' host too: one object for every package's client.
    const flows = orders.client(app.runner).orderFulfil;
    const { runId } = await flows.submit(order("o-1"), { headers, runId: "order-o-1" });

    // reserve submits the invoice job; its first attempt fails and its retry waits for the clock.
    await until(async () => (await flows.status(runId))?.step === 1, "the run waiting for its payment");
    await until(() => journal.includes("invoice.render#1"), "the first invoice attempt");
    const jobId = journal.find((l) => l.startsWith("invoice job "))!.slice("invoice job ".length);
    await until(async () => (await app.runner.handle(billing.invoiceRenderJob, jobId).status())?.state === "pending", "the invoice retry scheduled");

    // Restart: a new queue over the same store, a new runner with the same registrations.
    await stop(app);
    app = await start(store, clock, journal);
    const invoice = app.runner.handle(billing.invoiceRenderJob, jobId);
    expect(await invoice.fetchResult()).toBeNull();
    // The job is a run of the same runtime, on the same step queue as the workflow.
    expect(await app.runner.runtime.status(jobId)).toMatchObject({ state: "pending", step: 0 });
    const stats = await app.queue.view().stats(STEPS);
    expect(stats.scheduled).toBe(2); // the invoice retry and the payment wait, in one queue

    expect(await orders.client(app.runner.runtime).orderFulfil.signals.paymentReceived({ order_id: "o-1" }, { amount_cents: 1_000 })).toBe("delivered");
    await until(() => journal.includes("pack#1"), "pack waiting on the invoice");
    expect(journal).not.toContain("joined invoices/o-1.pdf");
    clock.advance(1_000); // the invoice retry is due: it runs beside the waiting pack step
    await until(async () => (await app.runner.runtime.status(runId))?.step === 3, "ship scheduled");
    clock.advance(PICKUP_DELAY_MS);

    const end = await orders.client(app.runner).orderFulfil.wait(runId);
    expect(await orders.client(app.runner.runtime).orderFulfil.result(runId)).toEqual(end);
    expect(end).toEqual({ status: "succeeded", runId, finalStep: 3, result: { order_id: "o-1", paid_cents: 1_000, tracking_number: "TRK-invoices/o-1.pdf" } });
    expect(await invoice.output()).toEqual({ object_key: "invoices/o-1.pdf", total: { amount_cents: 1_000, currency: "EUR" } });
    // reserve ran once and submitted once (its journal line races the job's first attempt, so it is checked apart).
    expect(journal.filter((l) => l.startsWith("invoice job "))).toEqual([`invoice job ${jobId}`]);
    expect(journal.filter((l) => !l.startsWith("invoice job "))).toEqual([
      "reserve#1",
      "invoice.render#1",
      "await_payment#1",
      "pack#1",
      "invoice.render#2",
      "joined invoices/o-1.pdf",
      "ship#1",
    ]);
    // The job's idempotency key collapses a second submission of the same invoice, from outside the workflow.
    const again = await billing
      .client(app.runner)
      .invoiceRender.submit({ invoice_id: "o-1", lines: [{ sku: "BOOK", quantity: 2, unit_price: { amount_cents: 500, currency: "EUR" } }] }, { headers });
    expect(again).toMatchObject({ jobId, newlySubmitted: false });
    // Jobs of the third package run on the same worker.
    const scan = await media.client(app.runner).imageScan.submit({ object_key: "photos/1.jpg" }, {});
    expect(await scan.result()).toEqual({ status: "succeeded", output: { verdict: "clean", detail: null } });
  });

  it("attaches a runner to a hand-built runtime; job handlers submit child jobs through it", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "shop", { clock, flushIntervalMs: 1 });
    const journal: Journal = [];
    const dispatcher = WorkflowDispatcher.builder();
    media.register(dispatcher, {
      ...mediaHandlers,
      imageThumbnail: {
        async run(input, ctx) {
          // A child job on the same runtime and step queue, awaited by its parent.
          const scan = await media.client(jobContext(ctx)).imageScan.submit({ object_key: input.object_key }, {});
          const r = await scan.result();
          journal.push(`scan ${r.status === "succeeded" ? r.output.verdict : r.status}`);
          return { thumbnails: { "64": `${input.object_key}@64` } };
        },
      },
    });
    orders.registerWorkflows(dispatcher, { orderFulfil: new OrderFulfil(journal) });
    const steps = dispatcher.build();
    expect(steps.jobs).toEqual(["media.image.scan", "media.image.thumbnail"]);
    expect(steps.workflows).toEqual(["orders.order.fulfil"]);
    const runtime = WorkflowRuntime.builder(queue, store, steps, NoopTerminalHook)
      .queueName(STEPS)
      .logger({ error: () => undefined })
      .build();

    // Before a runner is attached, a step that submits a job is told why it cannot.
    const detached = Step.detached(encodeStepEnvelope("orders.order.fulfil", "reserve", order("o-9")), { headers });
    const e = await steps.runStep(detached).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(StepError);
    expect((e as StepError).cause).toBeInstanceOf(JobsNotAttachedError);

    const runner = JobRunner.over(queue, runtime, steps);
    expect(() => JobRunner.over(queue, runtime, steps)).toThrow(JobsAlreadyAttachedError);
    const worker = runner.spawn();
    try {
      const thumb = await media.client(runner).imageThumbnail.submit({ object_key: "photos/2.jpg", sizes: [64] }, {});
      expect(await thumb.result()).toEqual({ status: "succeeded", output: { thumbnails: { "64": "photos/2.jpg@64" } } });
      expect(journal).toEqual(["reserve#1", "scan clean"]);
    } finally {
      await worker.shutdown();
      await queue.close();
    }
  });

  it("runs untyped runs beside typed ones through the fallback runner, submitted and awaited through the runner", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "shop", { clock: new MockClock(1_700_000_000_000), flushIntervalMs: 1 });
    const runner = media
      .register(JobRunner.builder(queue, store), mediaHandlers)
      .fallback({ runStep: async (step) => StepOutcome.succeed(new TextEncoder().encode(`echo:${new TextDecoder().decode(step.payload)}`)) })
      .build();
    const worker = runner.spawn();
    try {
      const { runId } = await runner.submit({ input: new TextEncoder().encode("raw") });
      const end = await runner.wait(runId);
      expect(end.termination.status).toBe("succeeded");
      expect(new TextDecoder().decode(end.outcome?.result)).toBe("echo:raw");
      expect(await runner.status(runId)).toMatchObject({ state: "terminated", status: "succeeded" });
      const scan = await media.client(runner).imageScan.submit({ object_key: "a.png" }, {});
      expect((await scan.result()).status).toBe("succeeded");
    } finally {
      await worker.shutdown();
      await queue.close();
    }
  });

  it("refuses registration mistakes before anything runs", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "shop", { clock: new MockClock(0), flushIntervalMs: 1 });
    try {
      const b = JobRunner.builder(queue, store);
      media.register(b, mediaHandlers);
      expect(() => media.register(b, mediaHandlers)).toThrow(/registered twice/);
      orders.registerWorkflows(b, { orderFulfil: new OrderFulfil([]) });
      expect(() => orders.registerWorkflows(b, { orderFulfil: new OrderFulfil([]) })).toThrow(/registered twice/);
      expect(() => b.register({ kind: "nonsense" } as never, {} as never)).toThrow(ValidationError);
      expect(() => b.register(media.imageScanJob, {} as never)).toThrow(/run\(input, ctx\)/);
    } finally {
      await queue.close();
    }
  });
});
