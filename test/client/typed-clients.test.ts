/**
 * @module Generated typed clients over a `TaqubaClient`: a billing job and
 * the orders workflow (submit, typed signal, wait) from a client, against
 * an owner serving a `JobRunner` that hosts both; the generated
 * validation refuses bad input before anything is written.
 */
import { describe, expect, it } from "vitest";
import { JobRunner, LocalStore, Queue, TaqubaClient, ValidationError, serveClients, type ObjectStore } from "taquba";
import { billing, orders } from "../../generated/index.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-typed-client-");
const STEPS = "shop-steps";
const headers = { tenant_id: "acme" };

const orderFulfil: orders.OrderFulfilHandler = {
  async reserve(p, ctx) {
    return ctx.next.awaitPayment.onSignal({ order_id: p.order_id }, { order_id: p.order_id, reservation_id: `res-${p.order_id}`, total_cents: p.total_cents });
  },
  async awaitPayment(p, ctx) {
    if (ctx.signal === null) return ctx.fail({ reason: "payment_timeout" });
    return ctx.next.pack({ order_id: p.order_id, reservation_id: p.reservation_id, paid_cents: ctx.signal.amount_cents });
  },
  async pack(p, ctx) {
    return ctx.next.ship({ order_id: p.order_id, parcel_id: `parcel-${p.reservation_id}`, paid_cents: p.paid_cents });
  },
  async ship(p, ctx) {
    return ctx.succeed({ order_id: p.order_id, paid_cents: p.paid_cents, tracking_number: `TRK-${p.parcel_id}` });
  },
};

async function startOwner(store: ObjectStore) {
  const queue = await Queue.open(store, "shop", { flushIntervalMs: 1 });
  const builder = JobRunner.builder(queue, store)
    .queueName(STEPS)
    .logger({ error: () => undefined });
  billing.register(builder, {
    emailSend: { run: async (input) => ({ message_id: `msg-${input.to}` }) },
    invoiceRender: { run: async (input) => ({ object_key: `invoices/${input.invoice_id}.pdf`, total: { amount_cents: 0, currency: "EUR" } }) },
  });
  orders.registerWorkflows(builder, { orderFulfil });
  const runner = builder.build();
  const worker = runner.spawn();
  const inbox = serveClients(queue, runner, { store });
  return {
    async stop() {
      await inbox.stop();
      await worker.shutdown();
      await queue.close();
    },
  };
}

async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  // The owner keeps a placeholder in each inbox folder.
  for await (const o of store.list(prefix)) if (!o.key.endsWith("/~keep")) out.push(o.key);
  return out;
}

describe("generated clients over a TaqubaClient", () => {
  it("submit a job and a workflow, signal it and wait, from a client", async () => {
    const store = new LocalStore(await tempDir());
    const owner = await startOwner(store);
    const client = await TaqubaClient.open(store, { name: "shop", queueName: STEPS, timeoutMs: 20_000 });
    try {
      const email = await billing.client(client).emailSend.submit({ to: "a@b.co", subject: "hi" }, { headers });
      expect(email.newlySubmitted).toBe(true);
      expect(await email.output()).toEqual({ message_id: "msg-a@b.co" });

      const flows = orders.client(client).orderFulfil;
      const { runId } = await flows.submit({ order_id: "o-1", lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 }, { headers, runId: "order-o-1" });
      const delivery = await flows.signals.paymentReceived({ order_id: "o-1" }, { amount_cents: 900, provider_ref: "psp-1" });
      expect(["delivered", "buffered"]).toContain(delivery);
      const end = await flows.wait(runId);
      expect(end).toMatchObject({ status: "succeeded", result: { order_id: "o-1", paid_cents: 900 } });
      expect(await flows.result(runId)).toMatchObject({ status: "succeeded" });
    } finally {
      await client.close();
      await owner.stop();
    }
  });

  it("refuse invalid input and headers before writing anything", async () => {
    const store = new LocalStore(await tempDir());
    const client = await TaqubaClient.open(store, { name: "shop", queueName: STEPS, timeoutMs: 100 });
    try {
      await expect(billing.client(client).emailSend.submit({ to: "a@b.co" } as never, { headers })).rejects.toBeInstanceOf(ValidationError);
      await expect(billing.client(client).emailSend.submit({ to: "a@b.co", subject: "s" }, { headers: { tenant_id: "NOT VALID" } })).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(orders.client(client).orderFulfil.submit({ order_id: "o" } as never, { headers })).rejects.toBeInstanceOf(ValidationError);
      await expect(orders.client(client).orderFulfil.signals.paymentReceived({ order_id: "o" }, { amount_cents: -1 } as never)).rejects.toBeInstanceOf(
        ValidationError,
      );
      expect(await keysUnder(store, "shop/")).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
