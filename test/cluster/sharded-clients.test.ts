/**
 * @module Generated clients over a `TaqubaClient` on a sharded store: jobs
 * and workflow runs land on the shard of their run id, typed signals on the
 * shard of their correlation key's last part (`order-payment:{order_id}`
 * meets run `{order_id}`), and submit, signal, status and wait all reach
 * the right owner, with two worker processes' worth of shard workers in
 * this process over one directory.
 */
import { describe, expect, it } from "vitest";
import { JobRunner, LocalStore, Queue, QueueReader, TaqubaClient, createShards, runShardWorkers, serveClients, shardOfRun, type ObjectStore } from "taquba";
import { billing, orders } from "../../generated/index.js";
import { shardStoreName } from "../../runtime/client/shard-route.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const tempDir = useTempDirs("taquba-sharded-client-");
const STEPS = "shop-steps";
const SHARDS = 3;
const headers = { tenant_id: "acme" };
const quiet = { error: () => undefined };

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

async function openShardOwner(store: ObjectStore, storeName: string) {
  const queue = await Queue.open(store, storeName, { flushIntervalMs: 1 });
  const builder = JobRunner.builder(queue, store).queueName(STEPS).logger(quiet);
  billing.register(builder, {
    emailSend: { run: async (input) => ({ message_id: `msg-${input.to}` }) },
    invoiceRender: { run: async (input) => ({ object_key: `invoices/${input.invoice_id}.pdf`, total: { amount_cents: 0, currency: "EUR" } }) },
  });
  orders.registerWorkflows(builder, { orderFulfil });
  const runner = builder.build();
  const worker = runner.spawn();
  const inbox = serveClients(queue, runner, { store, listIntervalMs: 100 });
  return {
    async stop() {
      await inbox.stop();
      await worker.shutdown();
      await queue.close();
    },
  };
}

describe("generated clients on a sharded store", () => {
  it("route jobs, runs, typed signals and waits to the right shard", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await createShards(store, "shop", SHARDS);
    const workers = await Promise.all(
      ["a", "b"].map((id) =>
        runShardWorkers(store, "shop", {
          processId: id,
          leaseDurationMs: 3_000,
          renewIntervalMs: 500,
          logger: quiet,
          start: async ({ storeName, term }) => openShardOwner(term.guard(store), storeName),
        }),
      ),
    );
    const client = await TaqubaClient.open(store, { name: "shop", queueName: STEPS, timeoutMs: 30_000, pollIntervalMs: 200 });
    try {
      await until("every shard owned", () => workers.flatMap((w) => w.owned()).length === SHARDS, 20_000);
      const flows = orders.client(client).orderFulfil;
      // Run ids equal to the order ids: the signal key order-payment:{order_id} routes with the run.
      const ids = Array.from({ length: 6 }, (_, i) => `o-${i}`);
      expect(new Set(ids.map((id) => shardOfRun(id, SHARDS))).size, "the orders spread over shards").toBeGreaterThan(1);
      for (const id of ids) {
        const { runId } = await flows.submit({ order_id: id, lines: [{ sku: "BOOK", quantity: 1 }], total_cents: 900 }, { headers, runId: id });
        expect(runId).toBe(id);
        expect(["delivered", "buffered"]).toContain(await flows.signals.paymentReceived({ order_id: id }, { amount_cents: 900, provider_ref: `psp-${id}` }));
      }
      for (const id of ids) {
        expect(await flows.wait(id)).toMatchObject({ status: "succeeded", result: { order_id: id, paid_cents: 900 } });
        expect(await client.status(id)).toMatchObject({ state: "terminated", status: "succeeded" });
      }
      // Operator commands reach the run's shard too: a succeeded run is refused by its own owner, not left unanswered.
      for (const id of ids) await expect(client.retryRun(id)).rejects.toMatchObject({ name: "RunNotRetryableError", reason: "succeeded" });
      // A dead-job requeue asks every shard; none holds this job.
      expect(await client.requeueDead("no-such-job")).toBe(false);
      const email = await billing.client(client).emailSend.submit({ to: "a@b.co", subject: "hi" }, { headers });
      expect(await email.output()).toEqual({ message_id: "msg-a@b.co" });
      // Each order lives on its own shard and no other.
      for (const id of ids) {
        for (let s = 0; s < SHARDS; s++) {
          const reader = await QueueReader.open(store, shardStoreName("shop", s));
          try {
            const has = (await reader.kvGet(`workflow/outcomes/${STEPS}/${id}`)) !== null;
            expect(has, `${id} on shard ${s}`).toBe(s === shardOfRun(id, SHARDS));
          } finally {
            await reader.close();
          }
        }
      }
    } finally {
      await client.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  }, 120_000);
});
