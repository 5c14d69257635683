/**
 * Webhooks: a run's termination delivered over HTTP to a receiver that
 * verifies the signature.
 *
 * Shows: `WebhookTerminalHook` turns each termination of a run that carries
 * a `callback_url` header into a webhook job, created in the same commit
 * that acknowledges the termination (so exactly once); `runWebhookWorker`
 * sends it, signed with the shared secret, and retries it with the queue's
 * backoff when the receiver answers 5xx. The receiver (a local loopback
 * server here) checks every request with `verifyWebhook` on the raw body,
 * drops a retried delivery it already processed (the delivery id is the
 * same on every attempt) and refuses a forged request. A run without the
 * header gets no notification at all.
 *
 * Loopback targets are refused by default (a webhook URL is often user
 * input); the worker here sets `allowLoopback` for the local receiver.
 *
 * Run: npx tsx examples/webhooks.ts
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import {
  MemoryStore,
  Queue,
  RUN_ID_HTTP_HEADER,
  RUN_STATUS_HTTP_HEADER,
  StepOutcome,
  WebhookTerminalHook,
  WebhookVerificationError,
  WorkflowRuntime,
  generateWebhookSecret,
  runWebhookWorker,
  verifyWebhook,
  type RunFailureNotice,
  type StepRunner,
} from "taquba";

const secret = generateWebhookSecret(); // shared by sender and receiver, e.g. from a secret manager
const enc = (s: string) => new TextEncoder().encode(s);

/** A failure notice as the receiver shows it: its code and message. */
function noticeText(body: Buffer): string {
  const notice = JSON.parse(body.toString("utf8")) as RunFailureNotice;
  return `notice ${notice.code}: "${notice.message}"`;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

// ---- the receiver -----------------------------------------------------------

const processed = new Set<string>();
let attempts = 0;
let gotAll: () => void = () => undefined;
const allReceived = new Promise<void>((r) => (gotAll = r));

const server = createServer((req, res) => {
  void readBody(req).then((body) => {
    try {
      const verified = verifyWebhook(secret, req.headers, body);
      if (++attempts === 1) {
        console.log(`receiver: delivery ${verified.id} verified, but answering 503 (pretend we are restarting)`);
        res.writeHead(503).end();
        return;
      }
      if (processed.has(verified.id)) console.log(`receiver: delivery ${verified.id} already processed; ignoring the duplicate`);
      else {
        processed.add(verified.id);
        const status = req.headers[RUN_STATUS_HTTP_HEADER.toLowerCase()];
        // A run that did not succeed arrives as a JSON notice: kind, code and the message the application exposed.
        const what = status === "succeeded" ? `body "${body.toString("utf8")}"` : noticeText(body);
        console.log(`receiver: verified delivery ${verified.id}: run ${req.headers[RUN_ID_HTTP_HEADER.toLowerCase()]} ${status}, ${what}`);
        if (processed.size === 2) gotAll();
      }
      res.writeHead(204).end();
    } catch (e) {
      if (!(e instanceof WebhookVerificationError)) throw e;
      console.log(`receiver: refused a request: ${e.reason}`);
      res.writeHead(401).end();
    }
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const callbackUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/runs/done`;
console.log(`receiver listening on ${callbackUrl}`);

// ---- the runtime --------------------------------------------------------------

const invoices: StepRunner = {
  async runStep(step) {
    const amount = Number(new TextDecoder().decode(step.payload));
    return amount > 0 ? StepOutcome.succeed(enc(`invoice for EUR ${amount} sent`)) : StepOutcome.fail(`invalid amount ${amount}`);
  },
};

const store = new MemoryStore();
const queue = await Queue.open(store, "webhooks-example", { queueConfigs: { callbacks: { backoff: { baseMs: 100, maxMs: 1000 } } } });
const runtime = WorkflowRuntime.builder(queue, store, invoices, new WebhookTerminalHook({ queueName: "callbacks" })).build();
const worker = runtime.spawn();
const stopDeliveries = new AbortController();
const deliveries = runWebhookWorker(queue, "callbacks", { secret, allowLoopback: true, signal: stopDeliveries.signal });

await runtime.submit({ runId: "invoice-7", input: enc("120"), options: { headers: { callback_url: callbackUrl } } });
await runtime.submit({ runId: "invoice-8", input: enc("0"), options: { headers: { callback_url: callbackUrl } } });
await runtime.submit({ runId: "invoice-9", input: enc("40") }); // no callback_url: no notification
console.log(`invoice-9 (no callback_url) ended ${(await runtime.wait("invoice-9")).termination.status}, with no webhook`);

// Someone without the secret tries to post a fake termination.
const forged = await fetch(callbackUrl, {
  method: "POST",
  headers: { "webhook-id": "msg_forged", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,AAAA" },
  body: "invoice for EUR 1000000 sent",
});
console.log(`forged request answered ${forged.status}`);

await allReceived;
stopDeliveries.abort();
await deliveries;
await worker.shutdown();
await queue.close();
server.close();
console.log(`webhooks done: ${processed.size} signed terminations delivered (${attempts} verified attempts, one retried after a 503)`);
