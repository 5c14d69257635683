/**
 * @module The webhook delivery worker against loopback receivers: signing,
 * retries with Retry-After, concurrency, dead letters, redirects, address
 * refusal, restarts, TLS with pinned resolution, leases and cancellation.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { afterEach, describe, expect, it } from "vitest";
import { ValidationError } from "taquba";
import {
  enqueueWebhook,
  FencedError,
  generateWebhookSecret,
  MemoryStore,
  MockClock,
  PermanentError,
  Queue,
  runWebhookWorker,
  verifyWebhook,
  WebhookDeliveryError,
  WebhookRejectedError,
  WebhookWorker,
  type ClaimedJob,
  type WebhookWorkerOptions,
  type WebhookRequest,
} from "taquba";
import { listenOnLoopback, REFUSING_PORT, withBody } from "../support/loopback-server.js";
import { until } from "../support/until.js";

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
  verified: { id: string; timestampMs: number } | string;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A receiver on loopback that verifies every request and answers from a script. */
async function receiver(secret: string, clock: MockClock, answer: (n: number, res: ServerResponse) => void) {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const server = createServer(
    withBody((req, body, res) => {
      let verified: Received["verified"];
      try {
        verified = verifyWebhook(secret, req.headers, body, { now: clock.now() });
      } catch (e) {
        verified = (e as Error).message;
      }
      received.push({ headers: req.headers, body, verified });
      answer(received.length, res);
      for (const w of waiters.splice(0)) w();
    }),
  );
  const { port, close } = await listenOnLoopback(server);
  cleanups.push(close);
  /** Resolves once `n` requests have arrived. */
  const requests = async (n: number) => {
    while (received.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { url: `http://127.0.0.1:${port}/hook`, port, received, requests };
}

async function openQueue(clock: MockClock) {
  const queue = await Queue.open(new MemoryStore(), "q", {
    clock,
    queueConfigs: { hooks: { backoff: { baseMs: 2_000, maxMs: 60_000 }, maxAttempts: 4 } },
  });
  cleanups.push(() => queue.close());
  return queue;
}

function startWorker(queue: Queue, opts: Parameters<typeof runWebhookWorker>[2]) {
  const ac = new AbortController();
  const done = runWebhookWorker(queue, "hooks", { ...opts, signal: ac.signal });
  cleanups.push(async () => {
    ac.abort();
    await done;
  });
  return done;
}

describe("webhook delivery worker", () => {
  it("signs, retries a 503 with Retry-After, then delivers; the id is stable across attempts", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const secret = generateWebhookSecret();
    const rx = await receiver(secret, clock, (n, res) => (n === 1 ? res.writeHead(503, { "Retry-After": "7" }).end("busy") : res.writeHead(200).end()));
    const queue = await openQueue(clock);
    const request: WebhookRequest = { url: rx.url, headers: { "Content-Type": "application/json" }, body: '{"order":"o-1"}' };
    const { jobId } = await enqueueWebhook(queue, "hooks", request);
    startWorker(queue, { secret, allowLoopback: true, clock });

    await rx.requests(1);
    await until("the 503 to be nacked", async () => (await queue.view().job(jobId))?.state === "scheduled");
    const afterFirst = await queue.view().job(jobId);
    expect(afterFirst?.lastError).toMatch(/503/);
    expect(afterFirst?.lastError).toMatch(/Retry-After 7000 ms: busy/);
    // The server's Retry-After (7 s) wins over the queue's shorter backoff.
    expect(afterFirst!.runAt! - clock.now()).toBe(7000);
    // Not due yet: nothing is sent until the clock reaches the retry time.
    expect(rx.received).toHaveLength(1);

    clock.advance(afterFirst!.runAt! - clock.now());
    await rx.requests(2);
    await until("the 200 to be acked", async () => (await queue.view().job(jobId)) === null);

    const [first, second] = rx.received;
    for (const r of [first!, second!]) {
      expect(r.verified).toMatchObject({ id: jobId });
      expect(r.body.toString()).toBe('{"order":"o-1"}');
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["user-agent"]).toBe("taquba-webhooks");
    }
    // Each attempt is signed at its own time, from the queue's clock.
    expect(first!.headers["webhook-timestamp"]).toBe(String(Math.floor(1_700_000_000_000 / 1000)));
    expect(Number(second!.headers["webhook-timestamp"])).toBe(Math.floor(clock.now() / 1000));
  });

  it("runs deliveries concurrently up to the limit, each exactly once", async () => {
    const clock = new MockClock();
    const secret = generateWebhookSecret();
    const held: ServerResponse[] = [];
    let maxInFlight = 0;
    const rx = await receiver(secret, clock, (_n, res) => {
      held.push(res);
      maxInFlight = Math.max(maxInFlight, held.length);
      // Answer in groups of four: the worker can only fill a group if it runs four at once.
      if (held.length === 4) for (const r of held.splice(0)) r.writeHead(200).end();
    });
    const queue = await openQueue(clock);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await enqueueWebhook(queue, "hooks", { url: rx.url, body: `n${i}` })).jobId);
    startWorker(queue, { secret, allowLoopback: true, clock, concurrency: 4 });
    await rx.requests(8);
    for (const id of ids) await until(`ack of ${id}`, async () => (await queue.view().job(id)) === null);
    expect(maxInFlight).toBe(4);
    expect(rx.received.map((r) => (r.verified as { id: string }).id).sort()).toEqual([...ids].sort());
    expect(rx.received.map((r) => r.body.toString()).sort()).toEqual(ids.map((_, i) => `n${i}`).sort());
  });

  it("dead-letters after the attempt limit when the receiver keeps failing", async () => {
    const clock = new MockClock();
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(500).end("down"));
    const queue = await openQueue(clock);
    const { jobId } = await enqueueWebhook(queue, "hooks", { url: rx.url });
    startWorker(queue, { allowLoopback: true, clock });
    for (let attempt = 1; attempt < 4; attempt++) {
      await rx.requests(attempt);
      await until(`retry ${attempt} to be scheduled`, async () => (await queue.view().job(jobId))?.state === "scheduled");
      clock.advance((await queue.view().job(jobId))!.runAt! - clock.now());
    }
    await rx.requests(4);
    await until("the dead-letter", async () => (await queue.view().job(jobId))?.state === "dead");
    const job = await queue.view().job(jobId);
    expect(job?.attempt).toBe(4);
    expect(job?.lastError).toMatch(/500: down/);
    expect(rx.received).toHaveLength(4);
  });

  it("dead-letters a 4xx at once and keeps the answer as the error", async () => {
    const clock = new MockClock();
    const secret = generateWebhookSecret();
    const rx = await receiver(secret, clock, (_n, res) => res.writeHead(410).end("endpoint removed"));
    const queue = await openQueue(clock);
    const { jobId } = await enqueueWebhook(queue, "hooks", { url: rx.url, body: "x" });
    startWorker(queue, { secret, allowLoopback: true, clock });
    await rx.requests(1);
    await until("the dead-letter", async () => (await queue.view().job(jobId))?.state === "dead");
    const job = await queue.view().job(jobId);
    expect(job?.attempt).toBe(1);
    expect(job?.lastError).toMatch(/410.*endpoint removed/);
  });

  it("keeps secrets out of the stored error: token path segments masked, the receiver's excerpt one bounded line, redacted", async () => {
    const clock = new MockClock();
    const leak = `oops\r\n\u001b[31mdb=postgres://app:hunter2@db.internal/prod ${"x".repeat(5_000)}`;
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(404).end(leak));
    const queue = await openQueue(clock);
    const { jobId } = await enqueueWebhook(queue, "hooks", {
      url: `${rx.url.replace("/hook", "")}/services/T0001/B0001/Xy12Ab34Cd56Ef78Gh90Ij12?token=s3cr3t`,
    });
    startWorker(queue, { allowLoopback: true, clock });
    await rx.requests(1);
    expect(rx.received[0]!.body).toBeDefined();
    await until("the dead-letter", async () => (await queue.view().job(jobId))?.state === "dead");
    const error = (await queue.view().job(jobId))!.lastError!;
    expect(error).toContain("/services/T0001/B0001/***");
    for (const secret of ["Xy12Ab34Cd56Ef78Gh90Ij12", "s3cr3t", "hunter2", "\r", "\n", "\u001b"]) expect(error, secret).not.toContain(secret);
    expect(error).toContain("postgres://***@db.internal/prod");
    expect(error.length).toBeLessThan(400);
  });

  it("does not follow redirects", async () => {
    const clock = new MockClock();
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(307, { Location: "http://169.254.169.254/latest/meta-data" }).end());
    const queue = await openQueue(clock);
    const { jobId } = await enqueueWebhook(queue, "hooks", { url: rx.url });
    startWorker(queue, { allowLoopback: true, clock });
    await until("the dead-letter", async () => (await queue.view().job(jobId))?.state === "dead");
    expect(rx.received).toHaveLength(1);
    expect((await queue.view().job(jobId))?.lastError).toMatch(/redirect/);
  });

  it("refuses loopback unless allowed, without sending anything", async () => {
    const clock = new MockClock();
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(200).end());
    const queue = await openQueue(clock);
    const { jobId } = await enqueueWebhook(queue, "hooks", { url: rx.url.replace("127.0.0.1", "localhost") });
    startWorker(queue, { clock });
    await until("the dead-letter", async () => (await queue.view().job(jobId))?.state === "dead");
    expect((await queue.view().job(jobId))?.lastError).toMatch(/loopback.*allowLoopback/);
    expect(rx.received).toHaveLength(0);
  });

  it("sends unsigned deliveries with id and timestamp when no secret is set", async () => {
    const clock = new MockClock();
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(204).end());
    const queue = await openQueue(clock);
    const { jobId } = await enqueueWebhook(queue, "hooks", { url: rx.url, method: "PUT", headers: { "User-Agent": "mine" } });
    startWorker(queue, { allowLoopback: true, clock });
    await rx.requests(1);
    await until("the ack", async () => (await queue.view().job(jobId)) === null);
    const h = rx.received[0]!.headers;
    expect(h["webhook-id"]).toBe(jobId);
    expect(h["webhook-signature"]).toBeUndefined();
    expect(h["user-agent"]).toBe("mine");
  });
});

describe("webhook delivery across restarts", () => {
  it("a delivery enqueued before a restart is sent after it", async () => {
    const clock = new MockClock();
    const secret = generateWebhookSecret();
    const rx = await receiver(secret, clock, (_n, res) => res.writeHead(200).end());
    const store = new MemoryStore();
    const before = await Queue.open(store, "q", { clock });
    const { jobId } = await enqueueWebhook(before, "hooks", { url: rx.url, body: "kept" });
    await before.close();

    const after = await Queue.open(store, "q", { clock });
    cleanups.push(() => after.close());
    startWorker(after, { secret, allowLoopback: true, clock });
    await rx.requests(1);
    expect(rx.received[0]!.verified).toMatchObject({ id: jobId });
    expect(rx.received[0]!.body.toString()).toBe("kept");
  });

  it("a delivery sent but not acknowledged before a takeover is sent again with the same webhook-id", async () => {
    const clock = new MockClock();
    const secret = generateWebhookSecret();
    const rx = await receiver(secret, clock, (_n, res) => res.writeHead(200).end());
    const store = new MemoryStore();
    const first = await Queue.open(store, "q", { clock });
    const { jobId } = await enqueueWebhook(first, "hooks", { url: rx.url, body: "once" });
    cleanups.push(() => first.close().catch(() => {}));
    const job = (await first.claim("hooks"))!;
    await new WebhookWorker({ secret, allowLoopback: true, clock }).process(job);
    expect(rx.received).toHaveLength(1);

    // Another process opens the store before the ack: the first is fenced and its claim requeued.
    const second = await Queue.open(store, "q", { clock });
    cleanups.push(() => second.close());
    const err = await first.ack(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedError);
    expect(first.closed).toBe(true);
    startWorker(second, { secret, allowLoopback: true, clock });
    await rx.requests(2);
    expect(rx.received.map((r) => (r.verified as { id: string }).id)).toEqual([jobId, jobId]);
  });
});

describe("WebhookWorker over https with a resolved name", () => {
  it("resolves once per attempt, checks the answer and connects to exactly that address", async () => {
    const cert = readFileSync(new URL("./fixtures/hooks-test.cert.pem", import.meta.url));
    const key = readFileSync(new URL("./fixtures/hooks-test.key.pem", import.meta.url));
    const clock = new MockClock();
    const secret = generateWebhookSecret();
    const seen: Array<{ host?: string; verified: boolean }> = [];
    const server = createTlsServer(
      { cert, key },
      withBody((req, body, res) => {
        let verified = true;
        try {
          verifyWebhook(secret, req.headers, body, { now: clock.now() });
        } catch {
          verified = false;
        }
        seen.push({ ...(req.headers.host === undefined ? {} : { host: req.headers.host }), verified });
        res.writeHead(202).end();
      }),
    );
    const { port, close } = await listenOnLoopback(server);
    cleanups.push(close);

    // A resolver whose second answer would point elsewhere (rebinding): only the first, checked one is used.
    const answers = ["127.0.0.1", "10.0.0.1"];
    const lookups: string[] = [];
    const worker = new WebhookWorker({
      secret,
      clock,
      allowLoopback: true,
      ca: cert,
      resolve: async (host) => {
        lookups.push(host);
        return [{ address: answers[lookups.length - 1] ?? "10.0.0.1", family: 4 }];
      },
    });
    const queue = await openQueue(clock);
    await enqueueWebhook(queue, "hooks", { url: `https://hooks.test:${port}/in`, body: "{}" });
    const job = (await queue.claim("hooks"))!;
    await worker.process(job);
    expect(lookups).toEqual(["hooks.test"]);
    expect(seen).toEqual([{ host: `hooks.test:${port}`, verified: true }]);

    // The next attempt resolves again, gets the private answer and is refused before connecting.
    const again = await worker.process(job).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(PermanentError);
    expect((again as Error).message).toMatch(/10\.0\.0\.1 \(private\)/);
    expect(seen).toHaveLength(1);
  });
});

describe("WebhookWorker.process", () => {
  async function claimOne(clock: MockClock, request: WebhookRequest): Promise<{ queue: Queue; job: ClaimedJob }> {
    const queue = await openQueue(clock);
    await enqueueWebhook(queue, "hooks", request);
    const job = await queue.claim("hooks", 1_000);
    return { queue, job: job! };
  }

  it("extends the lease to cover the request timeout before sending", async () => {
    const clock = new MockClock();
    let leaseAtRequest = 0;
    let job!: ClaimedJob;
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => {
      leaseAtRequest = job.lease.expiresAt;
      res.writeHead(200).end();
    });
    ({ job } = await claimOne(clock, { url: rx.url, timeoutMs: 120_000 }));
    expect(job.lease.expiresAt).toBe(clock.now() + 1_000);
    await new WebhookWorker({ allowLoopback: true, clock }).process(job);
    expect(leaseAtRequest).toBeGreaterThanOrEqual(clock.now() + 120_000);
  });

  it("carries the capped Retry-After delay on the retryable error", async () => {
    const clock = new MockClock(Date.parse("2026-01-01T00:00:00Z"));
    const rx = await receiver(generateWebhookSecret(), clock, (n, res) =>
      res.writeHead(n === 1 ? 429 : 503, { "Retry-After": n === 1 ? "Thu, 01 Jan 2026 00:00:45 GMT" : "86400" }).end(),
    );
    const { job } = await claimOne(clock, { url: rx.url });
    const worker = new WebhookWorker({ allowLoopback: true, clock, maxRetryAfterMs: 600_000 });
    const first = await worker.process(job).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(WebhookDeliveryError);
    expect(first).toMatchObject({ status: 429, retryAfterMs: 45_000, retryable: true });
    const second = await worker.process(job).catch((e: unknown) => e);
    expect(second).toMatchObject({ status: 503, retryAfterMs: 600_000 });
  });

  it("turns a malformed job and a cancelled job into permanent errors", async () => {
    const clock = new MockClock();
    const queue = await openQueue(clock);
    const { jobId } = await queue.enqueue("hooks", new Uint8Array(), { headers: { "webhook.url": "ftp://x.test/" } });
    const bad = (await queue.claim("hooks"))!;
    const err = await new WebhookWorker().process(bad).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentError);
    expect((err as Error).message).toMatch(/only http: and https:/);
    await queue.deadLetter(bad, (err as Error).message);
    expect((await queue.view().job(jobId))?.state).toBe("dead");

    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(200).end());
    await enqueueWebhook(queue, "hooks", { url: rx.url });
    const job = (await queue.claim("hooks"))!;
    expect(await queue.cancelJob(job.id)).toBe("requested");
    const cancelled = await new WebhookWorker({ allowLoopback: true }).process(job).catch((e: unknown) => e);
    expect(cancelled).toBeInstanceOf(PermanentError);
    expect((cancelled as Error).message).toMatch(/cancelled/);
    expect(rx.received).toHaveLength(0);
  });

  it("stops an in-flight delivery when its cancellation is requested", async () => {
    const clock = new MockClock();
    let job!: ClaimedJob;
    let queue!: Queue;
    const rx = await receiver(generateWebhookSecret(), clock, () => {
      // Hold the answer and cancel the job meanwhile.
      void queue.cancelJob(job.id);
    });
    ({ queue, job } = await claimOne(clock, { url: rx.url, timeoutMs: 60_000 }));
    const err = await new WebhookWorker({ allowLoopback: true }).process(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentError);
    expect((err as Error).message).toMatch(/cancelled/);
    expect(rx.received).toHaveLength(1);
  });

  it("retries timeouts and refused connections", async () => {
    const clock = new MockClock();
    const rx = await receiver(generateWebhookSecret(), clock, () => {
      /* never answers */
    });
    const { job } = await claimOne(clock, { url: rx.url, timeoutMs: 100 });
    const timedOut = await new WebhookWorker({ allowLoopback: true }).process(job).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(WebhookDeliveryError);
    expect((timedOut as Error).message).toMatch(/no answer within 100 ms/);

    const { job: job2 } = await claimOne(clock, { url: `http://127.0.0.1:${REFUSING_PORT}/` });
    const refused = await new WebhookWorker({ allowLoopback: true }).process(job2).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WebhookDeliveryError);
    expect((refused as Error).message).toMatch(/ECONNREFUSED/);
  });

  it("a 4xx is a PermanentError caused by a WebhookRejectedError with the status and the receiver's words", async () => {
    const clock = new MockClock();
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => res.writeHead(422).end("amount must be positive"));
    const { job } = await claimOne(clock, { url: rx.url });
    const err = await new WebhookWorker({ allowLoopback: true }).process(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentError);
    const cause = (err as PermanentError).cause;
    expect(cause).toBeInstanceOf(WebhookRejectedError);
    expect((cause as WebhookRejectedError).status).toBe(422);
    expect((cause as WebhookRejectedError).code).toBe("WEBHOOK_REJECTED");
    expect((cause as Error).message).toContain("amount must be positive");
    expect((err as Error).message).toBe((cause as Error).message);
  });

  it("a non-2xx whose body is cut short still ends with its status", async () => {
    const clock = new MockClock();
    // Promises 1000 bytes, sends a few, then drops the connection.
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => {
      res.writeHead(503, { "content-length": "1000" });
      res.write("overloaded, try la");
      setImmediate(() => res.socket?.destroy());
    });
    const { job } = await claimOne(clock, { url: rx.url });
    const err = await new WebhookWorker({ allowLoopback: true }).process(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookDeliveryError);
    expect((err as WebhookDeliveryError).status).toBe(503);
    expect((err as Error).message).toContain("overloaded");
  });

  it("a 2xx with an endless body is a delivery, without reading the body", async () => {
    const clock = new MockClock();
    let sent = 0;
    let closed!: () => void;
    const connectionClosed = new Promise<void>((r) => (closed = r));
    const rx = await receiver(generateWebhookSecret(), clock, (_n, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
      };
      res.on("drain", pump);
      res.on("close", () => closed());
      pump();
    });
    const { job } = await claimOne(clock, { url: rx.url, timeoutMs: 5_000 });
    await new WebhookWorker({ allowLoopback: true }).process(job);
    // The worker hung up: the receiver's endless stream ends, having sent little.
    await connectionClosed;
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });

  it("refuses bad options at construction", () => {
    expect(() => new WebhookWorker({ secret: "whsec_short" })).toThrow();
    expect(() => new WebhookWorker({ defaultTimeoutMs: 0 })).toThrow(ValidationError);
    expect(() => new WebhookWorker({ allowedNetworks: ["nope"] })).toThrow(ValidationError);
    expect(() => new WebhookWorker({ allowedNetworks: ["10.0.0.0/8", "nope"] })).toThrow(
      'WebhookWorkerOptions.allowedNetworks[1]: "nope" is not an IP address',
    );
  });

  it("refuses a secret or ca that is not text or bytes when built, not at the first delivery", () => {
    const revoked = Proxy.revocable([], {});
    revoked.revoke();
    const secret = generateWebhookSecret();
    const unreadable = Object.defineProperty([secret, secret], 1, {
      get() {
        throw new Error("vault sealed");
      },
    });
    const refusals: [WebhookWorkerOptions, string][] = [
      // A number passed the length check (undefined < 32 is false) and failed every delivery's signing.
      [
        { secret: 12345 as never },
        "WebhookWorkerOptions.secret: a webhook secret must be a base64 string (optionally whsec_-prefixed) or a Uint8Array, got 12345",
      ],
      [{ secret: [secret, {} as never] }, "WebhookWorkerOptions.secret[1]: a webhook secret must be"],
      [{ secret: unreadable }, "reading WebhookWorkerOptions.secret[1] threw: vault sealed"],
      [
        { secret: revoked.proxy as never },
        "WebhookWorkerOptions.secret: a webhook secret must be a base64 string (optionally whsec_-prefixed) or a Uint8Array, got a revoked Proxy",
      ],
      [{ ca: 5 as never }, "WebhookWorkerOptions.ca must be a PEM certificate (a string or Buffer), got 5"],
      [{ ca: ["pem", null as never] }, "WebhookWorkerOptions.ca[1] must be a PEM certificate (a string or Buffer), got null"],
    ];
    for (const [opts, message] of refusals) {
      let err: unknown;
      try {
        new WebhookWorker(opts);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain(message);
    }
    expect(() => new WebhookWorker({ secret: [secret, new Uint8Array(32)], ca: ["pem", Buffer.from("pem")] })).not.toThrow();
  });
});
