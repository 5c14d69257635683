/**
 * @module Generated job code over a real `JobRunner`: generated handlers
 * registered, submitted through the generated client, typed results read.
 */
import { describe, expect, it } from "vitest";
import { JobFailedError, jobContext } from "taquba";
import { billing } from "../../generated/index.js";
import { openJobEnv } from "./fixtures.js";

class EmailSend implements billing.EmailSendHandler {
  async run(input: billing.EmailSendInput, ctx: billing.EmailSendContext): Promise<billing.EmailSendOutput> {
    if (input.to.endsWith("@blocked.example")) ctx.fail({ reason: "rejected" });
    return { message_id: `m-${ctx.headers.tenant_id}-${jobContext(ctx).delivery.attempt}` };
  }
}

const invoiceRender: billing.InvoiceRenderHandler = {
  async run(input) {
    return { object_key: `invoices/${input.invoice_id}.pdf`, total: { amount_cents: input.lines.length, currency: "EUR" } };
  },
};

describe("generated code over a JobRunner", () => {
  it("registers generated handlers, submits through the generated client and reads typed results", async () => {
    const env = await openJobEnv((b) => billing.register(b, { emailSend: new EmailSend(), invoiceRender }));
    const client = billing.client(env.runner);
    const ok = await client.emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: { tenant_id: "acme" } });
    expect(await ok.result()).toEqual({ status: "succeeded", output: { message_id: "m-acme-1" } });
    const blocked = await client.emailSend.submit({ to: "x@blocked.example", subject: "Hi" }, { headers: { tenant_id: "acme" } });
    const outcome = await blocked.result();
    expect(outcome).toMatchObject({ status: "failed", error: { reason: "rejected" } });
    const typed = await env.runner
      .handle(billing.emailSendJob, blocked.jobId)
      .output()
      .catch((e: unknown) => e);
    expect(typed).toBeInstanceOf(JobFailedError);
    // The generated client's handles reach output() too, typed by the job's output.
    const sent: billing.EmailSendOutput = await ok.output();
    expect(sent).toEqual({ message_id: "m-acme-1" });
    expect(await blocked.output().catch((e: unknown) => e)).toBeInstanceOf(JobFailedError);
    const inv = await client.invoiceRender.submit(
      { invoice_id: "i-1", lines: [{ sku: "s", quantity: 1, unit_price: { amount_cents: 5, currency: "EUR" } }] },
      { headers: { tenant_id: "acme" } },
    );
    expect(await inv.result()).toEqual({ status: "succeeded", output: { object_key: "invoices/i-1.pdf", total: { amount_cents: 1, currency: "EUR" } } });
    await expect(client.emailSend.submit({ to: "a@b.co", subject: "Hi" }, { headers: {} as billing.BillingHeaders })).rejects.toThrow(/tenant_id/);
    await env.stop();
  });
});
