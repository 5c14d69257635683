/**
 * Type-level contract of generated code, checked by `npm run typecheck` and by
 * types.test.ts: correct use compiles, and every line after a
 * `@ts-expect-error` is misuse that must not compile.
 */

import type { JobHandle, JobRegistrar, JobSubmitter, SignalSender } from "taquba";
import { billing, media } from "../../../generated/index.js";

declare const runner: JobSubmitter & JobRegistrar;
declare const runtime: SignalSender;
declare const both: JobSubmitter & SignalSender;
declare const emailCtx: billing.EmailSendContext;
declare const invoiceCtx: billing.InvoiceRenderContext;

const headers = { tenant_id: "acme" };
const email: billing.EmailSendInput = { to: "a@b.co", subject: "Hello" };
const payment: billing.PaymentReceivedSignalPayload = { amount: { amount_cents: 500, currency: "EUR" } };

class EmailSend implements billing.EmailSendHandler {
  async run(input: billing.EmailSendInput, ctx: billing.EmailSendContext): Promise<billing.EmailSendOutput> {
    if (input.to.endsWith("@blocked.example")) ctx.fail({ reason: "rejected" });
    return { message_id: `m-${ctx.headers.tenant_id}` };
  }
}

const invoiceRender: billing.InvoiceRenderHandler = {
  async run(input) {
    const first = input.lines[0];
    if (first === undefined) throw new Error("an invoice has lines");
    return { object_key: `invoices/${input.invoice_id}.pdf`, total: first.unit_price };
  },
};

export async function correctUse(): Promise<string> {
  const handle: JobHandle<billing.EmailSendOutput, billing.EmailSendError> = await billing.client(runner).emailSend.submit(email, { headers, priority: 1 });
  await billing.client(runtime).signals.paymentReceived({ order_id: "o-1" }, payment);
  await billing.client(both).signals.paymentReceived({ order_id: "o-1" }, payment);
  await billing.client(both).invoiceRender.submit({ invoice_id: "i", lines: [] }, { headers: { tenant_id: "a", callback_url: "https://x.example" } });
  await media.client(runner).imageScan.submit({ object_key: "k" });
  billing.register(runner, { emailSend: new EmailSend(), invoiceRender });
  const names: "billing.email.send" = billing.JOB_NAMES.emailSend;
  const outcome = await handle.result();
  if (outcome.status === "succeeded") return outcome.output.message_id;
  if (outcome.status === "failed" && outcome.error !== undefined) return outcome.error.reason;
  return names;
}

export async function misuse(): Promise<void> {
  const c = billing.client(runner);
  // @ts-expect-error a misspelt input field
  await c.emailSend.submit({ too: "a@b.co", subject: "s" }, { headers });
  // @ts-expect-error a field of the wrong type
  await c.emailSend.submit({ to: 1, subject: "s" }, { headers });
  // @ts-expect-error a required input field left out
  await c.emailSend.submit({ to: "a@b.co" }, { headers });
  // @ts-expect-error the package requires headers, so options are required
  await c.emailSend.submit(email);
  // @ts-expect-error a required header left out
  await c.emailSend.submit(email, { headers: { callback_url: "https://x.example" } });
  // @ts-expect-error an undeclared header
  await c.emailSend.submit(email, { headers: { tenant_id: "a", tenant: "b" } });
  // @ts-expect-error an unknown job
  await c.emailSendd.submit(email, { headers });
  // @ts-expect-error signals need a target that can send them
  await c.signals.paymentReceived({ order_id: "o" }, payment);
  // @ts-expect-error jobs need a target that can submit them
  await billing.client(runtime).emailSend.submit(email, { headers });
  // @ts-expect-error a signal payload of the wrong shape
  await billing.client(runtime).signals.paymentReceived({ order_id: "o" }, { amount: { amount_cents: 1, currency: "JPY" } });
  // @ts-expect-error a misspelt signal key parameter
  await billing.client(runtime).signals.paymentReceived({ order: "o" }, payment);
  // @ts-expect-error a handler left out
  billing.register(runner, { emailSend: new EmailSend() });
  // @ts-expect-error a handler whose output has the wrong shape
  billing.register(runner, { emailSend: { run: async () => ({ id: "m" }) }, invoiceRender });
  // @ts-expect-error a typed error of the wrong shape
  emailCtx.fail({ reason: "lost" });
  // @ts-expect-error a job without an error type cannot fail with a typed one
  invoiceCtx.fail({ reason: "bounced" });
  // @ts-expect-error the output type is checked through the handle
  const n: number = (await c.emailSend.submit(email, { headers })).jobId;
  void n;
}
