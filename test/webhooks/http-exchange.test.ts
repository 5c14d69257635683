/**
 * @module sendHttp against loopback servers: pinned addresses, timeouts, refusals,
 * aborts and TLS name checks.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { pinnedLookup, sendHttp } from "../../runtime/webhooks/http-exchange.js";
import { startLocalLatenessProbe } from "../support/lateness-probe.js";
import { listenOnLoopback, REFUSING_PORT, withBody } from "../support/loopback-server.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Starts `server` on loopback, closed after the test; returns its port. */
async function start(server: Server): Promise<number> {
  const { port, close } = await listenOnLoopback(server);
  closers.push(close);
  return port;
}

async function serve(handler: (seen: Seen, res: ServerResponse) => void): Promise<{ port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer(
    withBody((req, body, res) => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body: body.toString() };
      seen.push(s);
      handler(s, res);
    }),
  );
  return { port: await start(server), seen };
}

const LOOPBACK = [{ address: "127.0.0.1", family: 4 as const }];

describe("sendHttp", () => {
  it("connects to the checked address, keeping the URL's host name", async () => {
    const { port, seen } = await serve((_s, res) => res.writeHead(204).end());
    // ".invalid" never resolves, so reaching the server proves no second DNS lookup happened.
    const r = await sendHttp({
      url: new URL(`http://hooks.invalid:${port}/in?q=1`),
      method: "PUT",
      headers: { "X-Test": "yes" },
      body: new TextEncoder().encode("hello"),
      timeoutMs: 5_000,
      addresses: LOOPBACK,
    });
    expect(r).toMatchObject({ kind: "response", status: 204 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "PUT", url: "/in?q=1", body: "hello" });
    expect(seen[0]!.headers.host).toBe(`hooks.invalid:${port}`);
    expect(seen[0]!.headers["x-test"]).toBe("yes");
    expect(seen[0]!.headers["content-length"]).toBe("5");
  });

  it("returns a non-2xx status with its headers and a body excerpt", async () => {
    const { port } = await serve((_s, res) => res.writeHead(503, { "retry-after": "3" }).end("x".repeat(5_000)));
    const r = await sendHttp({
      url: new URL(`http://127.0.0.1:${port}/`),
      method: "POST",
      headers: {},
      body: new Uint8Array(),
      timeoutMs: 5_000,
      addresses: LOOPBACK,
    });
    expect(r.kind).toBe("response");
    if (r.kind !== "response") return;
    expect(r.status).toBe(503);
    expect(r.headers["retry-after"]).toBe("3");
    expect(r.bodyExcerpt).toBe("x".repeat(512));
  });

  it("times out a receiver that never answers", async () => {
    const { port } = await serve(() => {
      /* never answers */
    });
    // Given up at its 150 ms, well before 3 s of this process being run (its stalls on busy cores left out).
    const stalls = startLocalLatenessProbe();
    try {
      const started = Date.now();
      const r = await sendHttp({
        url: new URL(`http://127.0.0.1:${port}/`),
        method: "POST",
        headers: {},
        body: new Uint8Array(),
        timeoutMs: 150,
        addresses: LOOPBACK,
      });
      const ended = Date.now();
      expect(r).toEqual({ kind: "timeout", timeoutMs: 150 });
      const notRun = await stalls.notRunWithin(started, ended);
      expect(ended - started - notRun, `${ended - started} ms, ${notRun} ms of it with this process not run`).toBeLessThan(3_000);
    } finally {
      stalls.stop();
    }
  });

  it("reports a refused connection as a network error", async () => {
    const r = await sendHttp({
      url: new URL(`http://127.0.0.1:${REFUSING_PORT}/`),
      method: "POST",
      headers: {},
      body: new Uint8Array(),
      timeoutMs: 5_000,
      addresses: LOOPBACK,
    });
    expect(r.kind).toBe("network");
    expect(r.kind === "network" && (r.error as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });

  it("ends as a network error when aborted", async () => {
    const { port } = await serve(() => {});
    const ac = new AbortController();
    const p = sendHttp({
      url: new URL(`http://127.0.0.1:${port}/`),
      method: "POST",
      headers: {},
      body: new Uint8Array(),
      timeoutMs: 5_000,
      addresses: LOOPBACK,
      signal: ac.signal,
    });
    ac.abort(new Error("shutting down"));
    const r = await p;
    expect(r.kind).toBe("network");
    expect(r.kind === "network" && r.error.message).toMatch(/shutting down/);
  });
});

describe("sendHttp over TLS", () => {
  // A self-signed test certificate for the name "hooks.test" only (fixtures/), valid for a century.
  const cert = readFileSync(new URL("./fixtures/hooks-test.cert.pem", import.meta.url));
  const key = readFileSync(new URL("./fixtures/hooks-test.key.pem", import.meta.url));

  async function tlsServer(): Promise<number> {
    return start(createTlsServer({ cert, key }, (_req, res) => res.writeHead(200).end()));
  }

  it("verifies the certificate against the URL's host while connecting to the pinned address", async () => {
    const port = await tlsServer();
    const send = (host: string, ca?: Buffer) =>
      sendHttp({
        url: new URL(`https://${host}:${port}/`),
        method: "POST",
        headers: {},
        body: new Uint8Array(),
        timeoutMs: 5_000,
        addresses: LOOPBACK,
        ...(ca ? { ca } : {}),
      });
    expect(await send("hooks.test", cert)).toMatchObject({ kind: "response", status: 200 });
    // Same address, another name: the certificate does not cover it.
    const wrongName = await send("other.test", cert);
    expect(wrongName.kind === "network" && (wrongName.error as NodeJS.ErrnoException).code).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
    // Without the CA the self-signed certificate is not trusted.
    const untrusted = await send("hooks.test");
    expect(untrusted.kind).toBe("network");
  });
});

describe("pinnedLookup", () => {
  const call = (addrs: Parameters<typeof pinnedLookup>[0], opts: Parameters<ReturnType<typeof pinnedLookup>>[1]) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
      pinnedLookup(addrs)("h.invalid", opts, (err, address, family) => resolve({ err, address, family })),
    );
  const both = [
    { address: "2606:4700::1", family: 6 as const },
    { address: "8.8.8.8", family: 4 as const },
  ];

  it("answers only with the checked addresses, by family", async () => {
    expect(await call(both, {})).toEqual({ err: null, address: "2606:4700::1", family: 6 });
    expect(await call(both, { family: 4 })).toEqual({ err: null, address: "8.8.8.8", family: 4 });
    expect((await call(both, { all: true })).address).toEqual(both);
    const none = await call([{ address: "8.8.8.8", family: 4 }], { family: 6 });
    expect(none.err?.code).toBe("ENOTFOUND");
  });
});
