/**
 * @module S3Store when the service misbehaves: a missing bucket, a body that
 * stops part way, errors on DELETE, connections reset or never answered.
 * The bucket case runs on s3rver; the others on a loopback HTTP server
 * that speaks just enough of the protocol to misbehave on cue.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { S3Store, StoreUnavailableError, ValidationError } from "taquba";
import { listenOnLoopback } from "../support/loopback-server.js";
import { useS3Server } from "../support/use-s3-server.js";

const server = useS3Server();

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const retry = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 };

/** A loopback endpoint answering every request with `answer`; counts requests by method. */
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});
async function endpoint(answer: (req: IncomingMessage, res: ServerResponse) => void, attemptTimeoutMs?: number) {
  const requests: Record<string, number> = {};
  const sockets = new Set<Socket>();
  const http = createServer((req, res) => {
    requests[req.method ?? "?"] = (requests[req.method ?? "?"] ?? 0) + 1;
    req.resume();
    req.on("end", () => answer(req, res));
  });
  http.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  const { port, close } = await listenOnLoopback(http);
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    await close();
  });
  const store = new S3Store({
    bucket: "bucket",
    clientConfig: { endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "k", secretAccessKey: "s" } },
    retry: { ...retry, ...(attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs }) },
  });
  return { store, requests };
}

async function failure(p: Promise<unknown>): Promise<StoreUnavailableError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreUnavailableError);
  return err as StoreUnavailableError;
}

describe("S3Store failure paths", () => {
  it("a bucket that does not exist is an error naming the bucket, never an empty store", async () => {
    const store = new S3Store({ bucket: "no-such-bucket", clientConfig: server.clientConfig, retry });
    const before = server.requests.GET ?? 0;
    const err = await failure(store.get("k"));
    expect(err.message).toContain("no-such-bucket");
    expect((err.cause as { name?: string }).name).toBe("NoSuchBucket");
    // Not retried: it will not appear by itself.
    expect((server.requests.GET ?? 0) - before).toBe(1);
    await failure(store.put("k", enc("v")));
    await failure(store.delete("k"));
    await failure(
      (async () => {
        for await (const _ of store.list("")) void _;
      })(),
    );
  });

  it("errors on DELETE: retried when transient, reported when not", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: "deletes", clientConfig: server.clientConfig, retry });
    await store.put("k", enc("v"));
    server.failNext(2, { status: 503, code: "SlowDown", method: "DELETE" });
    await store.delete("k");
    expect(await store.get("k")).toBeNull();
    await store.put("k", enc("v"));
    server.failNext(1, { status: 403, code: "AccessDenied", method: "DELETE" });
    const err = await failure(store.delete("k"));
    expect(err.message).toContain("delete");
    expect(await store.get("k")).not.toBeNull();
  });

  it("a body that stops part way is retried, then StoreUnavailableError; never a short object", async () => {
    const { store, requests } = await endpoint((_req, res) => {
      res.writeHead(200, { "content-length": "100", etag: '"e"' });
      res.write("0123456789");
      setImmediate(() => res.socket?.destroy());
    });
    const err = await failure(store.get("k"));
    expect(err.message).toContain("get");
    expect(requests.GET).toBe(retry.maxAttempts);
  });

  it("a read into a buffer whose body stops part way is read again whole into it: the answer is the second attempt's bytes", async () => {
    const object = Buffer.from("abcdefghijklmnopqrstuvwxyz");
    let attempt = 0;
    const { store, requests } = await endpoint((_req, res) => {
      if (++attempt === 1) {
        // Ten bytes that are not the object's, then the connection drops.
        res.writeHead(206, { "content-length": "20", "content-range": "bytes 3-22/26", etag: '"e"' });
        res.write("ZZZZZZZZZZ");
        setImmediate(() => res.socket?.destroy());
        return;
      }
      res.writeHead(206, { "content-length": "20", "content-range": "bytes 3-22/26", etag: '"e"' });
      res.end(object.subarray(3, 23));
    });
    const into = new Uint8Array(20);
    expect(await store.getRangeInto("k", 3, into)).toBe(20);
    expect(Buffer.from(into).toString()).toBe("defghijklmnopqrstuvw");
    expect(requests.GET).toBe(2);
  });

  it("a read into a buffer whose first attempt timed out writes nothing more into it, even when that attempt's body delivers more after the retry succeeded", async () => {
    // A client whose first answer sends two bytes, then stalls until the second answer was read whole, then sends the rest.
    let secondRead: () => void = () => {};
    const secondDone = new Promise<void>((resolve) => {
      secondRead = resolve;
    });
    let lateSent: () => void = () => {};
    const lateDone = new Promise<void>((resolve) => {
      lateSent = resolve;
    });
    let attempt = 0;
    async function* first() {
      yield Buffer.from("ZZ");
      await secondDone;
      try {
        yield Buffer.from("ZZZZZZZZ");
      } finally {
        lateSent();
      }
    }
    async function* second() {
      yield Buffer.from("0123456789");
      secondRead();
    }
    const client = {
      send: async () => ({ Body: ++attempt === 1 ? first() : second(), ContentLength: 10, ContentRange: "bytes 0-9/10" }),
    };
    const store = new S3Store({ bucket: "bucket", client: client as never, retry: { ...retry, attemptTimeoutMs: 50 } });
    const into = new Uint8Array(10);
    expect(await store.getRangeInto("k", 0, into)).toBe(10);
    await lateDone;
    await new Promise((r) => setImmediate(r));
    expect(Buffer.from(into).toString()).toBe("0123456789");
    expect(attempt).toBe(2);
  });

  it("a server that ignores the range and sends the whole object: the range asked for is copied out of it", async () => {
    const { store } = await endpoint((_req, res) => {
      res.writeHead(200, { "content-length": "26", etag: '"e"' });
      res.end("abcdefghijklmnopqrstuvwxyz");
    });
    const into = new Uint8Array(5);
    expect(await store.getRangeInto("k", 10, into)).toBe(5);
    expect(Buffer.from(into).toString()).toBe("klmno");
  });

  it("a connection reset on any operation is retried, then StoreUnavailableError", async () => {
    const { store, requests } = await endpoint((req) => req.socket.destroy());
    await failure(store.get("k"));
    await failure(store.put("k", enc("v")));
    await failure(store.delete("k"));
    expect(requests).toEqual({ GET: retry.maxAttempts, PUT: retry.maxAttempts, DELETE: retry.maxAttempts });
  });

  it("a server that never answers, or stalls in the body, is a timeout: retried, then StoreUnavailableError", async () => {
    const silent = await endpoint(() => {
      /* never answers */
    }, 300);
    let err = await failure(silent.store.get("k"));
    expect((err.cause as Error).message).toContain("no complete answer within 300 ms");
    // Every attempt was made (under heavy load one may time out before its request arrives).
    expect(err.message).toContain(`attempt ${retry.maxAttempts}`);
    await failure(silent.store.put("k", enc("v")));
    await failure(silent.store.delete("k"));
    const stalling = await endpoint((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("0123456789");
    }, 300);
    err = await failure(stalling.store.get("k"));
    expect(err.message).toContain(`attempt ${retry.maxAttempts}`);
    expect(stalling.requests.GET).toBeGreaterThan(0);
  });

  it("refuses retry delays that are not finite, as the other HTTP stores do (an infinite wait would be a 1 ms timer)", () => {
    for (const retry of [
      { baseDelayMs: Number.POSITIVE_INFINITY },
      { maxDelayMs: Number.POSITIVE_INFINITY },
      { baseDelayMs: Number.NaN },
      { maxDelayMs: -1 },
    ]) {
      expect(() => new S3Store({ bucket: "bucket", retry }), JSON.stringify(retry)).toThrow(ValidationError);
      expect(() => new S3Store({ bucket: "bucket", retry }), JSON.stringify(retry)).toThrow(/delays finite numbers/);
    }
  });

  it("refuses a number of attempts that is not a whole number from 1 to 100, as the other HTTP stores do", () => {
    for (const maxAttempts of [0, 2.5, 101, 1e30, Number.NaN]) {
      expect(() => new S3Store({ bucket: "bucket", retry: { maxAttempts } }), String(maxAttempts)).toThrow(
        /retry\.maxAttempts must be an integer from 1 to 100/,
      );
    }
    expect(() => new S3Store({ bucket: "bucket", retry: { maxAttempts: 100 } })).not.toThrow();
  });

  it("refuses an attempt timeout that is not a usable number of milliseconds", () => {
    for (const attemptTimeoutMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e30]) {
      expect(() => new S3Store({ bucket: "bucket", retry: { attemptTimeoutMs } })).toThrow(ValidationError);
      expect(() => new S3Store({ bucket: "bucket", retry: { attemptTimeoutMs } })).toThrow(/attemptTimeoutMs must be/);
    }
  });
});
