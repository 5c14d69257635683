/**
 * Acceptance: the "Generated code" section of the public API contract,
 * over the checked-in generated package "billing". The generated package is
 * imported from the generated tree (as an application would); everything else
 * comes from "taquba".
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  JobRunner,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  ValidationError,
  WorkflowRuntime,
  type JobHandle,
  type StepRunner,
} from "taquba";
import { billing } from "../../generated/index.js";
import { dec, enc, until } from "./support.js";

const HOUR = 3_600_000;

describe("generated signal client over a workflow runtime", () => {
  it("billing.client(runtime).signals.paymentReceived(params, payload) builds the key, validates and sends", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "gen", { clock, flushIntervalMs: 1 });
    const waiter: StepRunner = {
      async runStep(s) {
        if (s.stepNumber === 0) return StepOutcome.continueOnSignal(s.payload, `payment:${dec(s.payload)}`, HOUR);
        return StepOutcome.succeed(s.signal ?? enc("timeout"));
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, waiter, NoopTerminalHook).build();
    const worker = runtime.spawn();
    const signals = billing.client(runtime).signals;

    // No waiter yet: buffered under the key the template builds.
    expect(await signals.paymentReceived({ order_id: "o-0" }, { amount: { amount_cents: 1, currency: "EUR" } })).toBe("buffered");
    expect(await runtime.clearSignal("payment:o-0")).toBe(true);

    await runtime.submit({ input: enc("o-1"), runId: "order-1" });
    await until(async () => (await runtime.status("order-1"))?.step === 1, "waiting for the payment");
    const sent = await signals.paymentReceived({ order_id: "o-1" }, { amount: { amount_cents: 500, currency: "EUR" } });
    expect(sent).toBe("delivered");
    const end = await runtime.wait("order-1");
    expect(billing.paymentReceivedSignal.decode(end.outcome!.result!)).toEqual({ amount: { amount_cents: 500, currency: "EUR" } });

    // Invalid at run time: a ValidationError, nothing sent.
    const bad = { amount: { amount_cents: -1, currency: "EUR" } } as const;
    await expect(signals.paymentReceived({ order_id: "o-2" }, bad)).rejects.toBeInstanceOf(ValidationError);
    expect(await runtime.clearSignal("payment:o-2")).toBe(false);

    await worker.shutdown();
    await queue.close();
  });

  it("is fully typed: a wrong signal field or a jobs client over a runtime does not compile", () => {
    type Signals = ReturnType<typeof billing.client<WorkflowRuntime>>["signals"];
    expectTypeOf<Signals["paymentReceived"]>().returns.toEqualTypeOf<Promise<"delivered" | "buffered">>();
    const check = (s: Signals) => {
      // @ts-expect-error the payload's amount must be Money
      void s.paymentReceived({ order_id: "o" }, { amount: 5 });
      // @ts-expect-error a misspelt key parameter
      void s.paymentReceived({ orderId: "o" }, { amount: { amount_cents: 1, currency: "EUR" } });
    };
    void check;
    // @ts-expect-error a workflow runtime is not a job submitter, so its client has no job submitters
    type NoJobs = ReturnType<typeof billing.client<WorkflowRuntime>>["emailSend"];
    expectTypeOf<NoJobs>().not.toBeNever();
  });

  it("handler interfaces type the input, context and output", () => {
    class EmailSend implements billing.EmailSendHandler {
      async run(input: billing.EmailSendInput, ctx: billing.EmailSendContext): Promise<billing.EmailSendOutput> {
        if (input.to.endsWith("@bounce.test")) ctx.fail({ reason: "bounced" });
        return { message_id: `m-${ctx.jobId}` };
      }
    }
    expectTypeOf<Parameters<EmailSend["run"]>[0]>().toEqualTypeOf<billing.EmailSendInput>();
    expectTypeOf<billing.JobsClient["emailSend"]["submit"]>().returns.toEqualTypeOf<Promise<JobHandle<billing.EmailSendOutput, billing.EmailSendError>>>();
  });
});

describe("generated job client over a job runner", () => {
  class EmailSend implements billing.EmailSendHandler {
    async run(input: billing.EmailSendInput, ctx: billing.EmailSendContext): Promise<billing.EmailSendOutput> {
      if (input.to.endsWith("@bounce.test")) ctx.fail({ reason: "bounced" });
      return { message_id: `m-${ctx.headers.tenant_id}` };
    }
  }
  class InvoiceRender implements billing.InvoiceRenderHandler {
    async run(input: billing.InvoiceRenderInput): Promise<billing.InvoiceRenderOutput> {
      return { object_key: `invoices/${input.invoice_id}.pdf`, total: input.lines[0]!.unit_price };
    }
  }

  it("billing.register(builder, handlers) and billing.client(runner).emailSend.submit(input, { headers })", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(store, "gen-jobs", { clock, flushIntervalMs: 1 });
    const runner = billing.register(JobRunner.builder(queue, store), { emailSend: new EmailSend(), invoiceRender: new InvoiceRender() }).build();
    const worker = runner.spawn();
    const client = billing.client(runner);
    const handle = await client.emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: { tenant_id: "acme" } });
    expect(await handle.result()).toEqual({ status: "succeeded", output: { message_id: "m-acme" } });
    const bounced = await (await client.emailSend.submit({ to: "x@bounce.test", subject: "Hi" }, { headers: { tenant_id: "acme" } })).result();
    expect(bounced).toMatchObject({ status: "failed", error: { reason: "bounced" } });
    // Validated at run time: nothing is enqueued.
    await expect(client.emailSend.submit({ to: "not an email", subject: "Hi" }, { headers: { tenant_id: "acme" } })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: { tenant_id: "ACME Corp" } })).rejects.toBeInstanceOf(ValidationError);
    const check = () => {
      // @ts-expect-error a misspelt input field
      void client.emailSend.submit({ too: "a@b.co", subject: "Hi" }, { headers: { tenant_id: "acme" } });
      // @ts-expect-error the package requires the tenant_id header
      void client.emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: {} });
    };
    void check;
    await worker.shutdown();
    await queue.close();
  });
});
