/**
 * Hello jobs: typed jobs from a YAML spec, submitted concurrently, their
 * results awaited, and read back after a restart.
 *
 * Shows the generated-code workflow end to end: `schemas/billing.taquba.yaml`
 * declares the jobs `email.send` and `invoice.render` with their input,
 * output, error and headers; `npm run codegen` writes `generated/billing`;
 * this file implements the generated handler interfaces, registers them with
 * `billing.register`, and submits through `billing.client(runner)`, whose
 * arguments are typed (a wrong field or header is a compile error) and
 * validated before anything is enqueued. A handler ends a job with a typed
 * error through `ctx.fail`, which the caller receives on the failed outcome.
 * The `email.send` idempotency key (`email:{to}:{subject}`) makes a
 * duplicate submission return the existing job, even after it finished. A
 * job's result is durable: a fresh runner over the same directory reads it
 * with `fetchResult`.
 *
 * Run: npx tsx examples/hello-jobs.ts
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JobRunner, LocalStore, Queue, ValidationError } from "taquba";
import { billing } from "../generated/billing/index.js";

class EmailSend implements billing.EmailSendHandler {
  sent = 0;
  async run(input: billing.EmailSendInput, ctx: billing.EmailSendContext): Promise<billing.EmailSendOutput> {
    if (input.to.endsWith("@bounce.example.com")) ctx.fail({ reason: "bounced" });
    this.sent++;
    return { message_id: `msg-${ctx.headers.tenant_id}-${input.to.split("@")[0]}` };
  }
}

class InvoiceRender implements billing.InvoiceRenderHandler {
  async run(input: billing.InvoiceRenderInput): Promise<billing.InvoiceRenderOutput> {
    const amount = input.lines.reduce((sum, l) => sum + l.quantity * l.unit_price.amount_cents, 0);
    return { object_key: `invoices/${input.invoice_id}.pdf`, total: { amount_cents: amount, currency: input.lines[0]!.unit_price.currency } };
  }
}

const dir = await mkdtemp(join(tmpdir(), "taquba-hello-jobs-"));
const store = new LocalStore(dir);
const emails = new EmailSend();

async function openRunner() {
  const queue = await Queue.open(store, "billing");
  const runner = billing.register(JobRunner.builder(queue, store), { emailSend: emails, invoiceRender: new InvoiceRender() }).build();
  return { queue, runner, worker: runner.spawn(), client: billing.client(runner) };
}

const first = await openRunner();
const headers = { tenant_id: "acme" };

// Submitted concurrently; each handle resolves with its job's typed output.
const recipients = ["ada@example.com", "grace@example.com", "linus@example.com"];
const handles = await Promise.all(recipients.map((to) => first.client.emailSend.submit({ to, subject: "Welcome" }, { headers })));
for (const h of handles) {
  const outcome = await h.result();
  console.log(`email job ${h.jobId}: ${outcome.status === "succeeded" ? `sent ${outcome.output.message_id}` : outcome.status}`);
}

const invoice = await first.client.invoiceRender.submit(
  {
    invoice_id: "inv-2026-001",
    lines: [
      { sku: "grinder", quantity: 1, unit_price: { amount_cents: 12900, currency: "EUR" } },
      { sku: "beans", quantity: 3, unit_price: { amount_cents: 1450, currency: "EUR" } },
    ],
  },
  { headers },
);
const rendered = await invoice.result();
if (rendered.status !== "succeeded") throw new Error(`invoice job ${rendered.status}`);
console.log(`invoice job: ${rendered.output.object_key}, total ${rendered.output.total.amount_cents / 100} ${rendered.output.total.currency}`);

// The same email again: the idempotency key matches the finished job, nothing is sent twice.
const again = await first.client.emailSend.submit({ to: "ada@example.com", subject: "Welcome" }, { headers });
console.log(`duplicate email: newlySubmitted=${again.newlySubmitted}, same job ${again.jobId === handles[0]!.jobId}, ${emails.sent} emails sent in all`);

// A typed failure.
const bounced = await (await first.client.emailSend.submit({ to: "nobody@bounce.example.com", subject: "Welcome" }, { headers })).result();
if (bounced.status === "failed") console.log(`email to nobody@bounce.example.com failed with typed error ${JSON.stringify(bounced.error)}`);

// Invalid headers never reach the queue.
await first.client.emailSend.submit({ to: "ada@example.com", subject: "Hi" }, { headers: { tenant_id: "ACME Corp" } }).catch((e: unknown) => {
  if (!(e instanceof ValidationError)) throw e;
  console.log(`rejected before enqueueing: ${e.message.replace(/\s*\n\s*/g, " ")}`);
});

await first.worker.shutdown();
await first.queue.close();

// A restart: a new runner over the same directory reads the results the first one committed.
const second = await openRunner();
const afterRestart = await second.runner.handle(billing.emailSendJob, handles[1]!.jobId).fetchResult();
console.log(`after a restart, job ${handles[1]!.jobId}: ${JSON.stringify(afterRestart)}`);
await second.worker.shutdown();
await second.queue.close();
await rm(dir, { recursive: true, force: true });
console.log("hello-jobs done");
