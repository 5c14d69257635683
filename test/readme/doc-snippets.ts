/**
 * @module Code shown in docs/ that has no home in an example: compiled by
 * the type check (never run), so the documentation test can hold the docs'
 * blocks to real, type-correct code.
 */
import { AzureBlobStore, GcsStore, JobRunner, Queue, serveClients, TaqubaClient, type ObjectStore } from "taquba";
import { orders } from "../../generated/index.js";
import type { OrderFulfilInput, OrdersHeaders } from "../../generated/orders/types.js";

export function azureStore(): AzureBlobStore {
  const store = new AzureBlobStore({ account: "myaccount", container: "taquba", prefix: "prod" });
  // or: { container, connectionString }, { account, accountKey }, { account, credential: new DefaultAzureCredential() }
  return store;
}

export function gcsStore(): GcsStore {
  const store = new GcsStore({ bucket: "my-bucket", prefix: "taquba/prod" });
  return store;
}

/** docs/client.md: the owner and a client in another process. */
export async function ownerAndClient(
  store: ObjectStore,
  input: Uint8Array,
  payload: Uint8Array,
  order: OrderFulfilInput,
  headers: OrdersHeaders,
): Promise<void> {
  // The owner: the one process that opens the queue.
  const queue = await Queue.open(store, "app", { onClosed: (reason) => reason && process.exit(1) });
  const runner = JobRunner.builder(queue, store)
    .queueName("workflow-steps") /* .register(...) */
    .build();
  const worker = runner.spawn();
  const inbox = serveClients(queue, runner, { store }); // or a WorkflowRuntime when clients submit no jobs

  // Any other process.
  const client = await TaqubaClient.open("s3://bucket/prefix", { name: "app", queueName: "workflow-steps" });
  const { runId, newlySubmitted } = await client.submit({ runId: "order-1", input });
  await client.signal("payment:order-1", payload); // "delivered" | "buffered"
  await client.cancel(runId); // true | false
  const end = await client.wait(runId); // also status, outcome, waitTimeout, clearSignal
  await orders.client(client).orderFulfil.submit(order, { headers }); // generated clients accept it too
  await client.close();
  void [worker, inbox, newlySubmitted, end];
}
