/**
 * @module Azurite's Blob service on loopback for tests: a child process with
 * in-memory persistence on a port the system picks, telemetry off, behind a
 * small forwarding proxy that counts requests by method and can answer the
 * next matching requests with an injected error instead of forwarding them.
 */
import type { ChildProcess } from "node:child_process";
import { request as httpRequest, createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AZURITE_ACCOUNT, AZURITE_ACCOUNT_KEY } from "../../runtime/store/azure-blob-store.js";
import { listenOnLoopback } from "./loopback-server.js";
import { spawnTied } from "./tied-children.js";

/** An error the proxy answers instead of forwarding a request. */
export interface InjectedAzureResponse {
  status: number;
  /** The `x-ms-error-code`, e.g. `ServerBusy`. */
  code: string;
  /** Only requests with this method. Default: any. */
  method?: string;
}

export interface TestAzurite {
  /** The Blob service URL through the proxy, account included. */
  endpoint: string;
  /** Azurite itself, without the proxy. */
  directEndpoint: string;
  account: string;
  accountKey: string;
  /** A connection string for the proxied endpoint. */
  connectionString: string;
  /** Requests that reached the proxy, by HTTP method. */
  readonly requests: Record<string, number>;
  failNext(count: number, response: InjectedAzureResponse): void;
  /**
   * While on, the proxy answers a List Blobs request that carries a marker
   * with the first page it forwarded (marker and all), as a service that
   * ignores markers does; `"giving new ones"`: each time with a marker
   * never given before.
   */
  ignoreMarkers(on: boolean | "giving new ones"): void;
  /** Creates a container (idempotent). */
  createContainer(name: string): Promise<void>;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

function errorXml(code: string): string {
  return `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>injected by the test proxy</Message></Error>`;
}

/** Starts Azurite's Blob service and the proxy in front of it. */
export async function startAzurite(): Promise<TestAzurite> {
  const main = join(dirname(require.resolve("azurite/package.json")), "dist", "src", "blob", "main.js");
  const workDir = await mkdtemp(join(tmpdir(), "taquba-azurite-"));
  const child = spawnTied(
    process.execPath,
    [
      main,
      "--blobHost",
      "127.0.0.1",
      "--blobPort",
      "0",
      "--inMemoryPersistence",
      "--extentMemoryLimit",
      "512",
      "--disableTelemetry",
      "--skipApiVersionCheck",
      "--loose",
    ],
    { cwd: workDir, stdio: ["ignore", "pipe", "pipe"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match) {
        child.stdout!.off("data", onData);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    child.once("exit", (code) => reject(new Error(`azurite exited with ${code} before listening:\n${output}`)));
    setTimeout(() => reject(new Error(`azurite did not start within 30 s:\n${output}`)), 30_000).unref();
  });
  // Keep draining its output so a full pipe never blocks it.
  child.stdout!.resume();
  child.stderr!.resume();

  const requests: Record<string, number> = {};
  const injected: { remaining: number; response: InjectedAzureResponse }[] = [];
  let ignoringMarkers: boolean | "giving new ones" = false;
  let freshMarkers = 0;
  let firstPage: { status: number; headers: IncomingMessage["headers"]; body: Buffer } | undefined;
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? "GET";
    requests[method] = (requests[method] ?? 0) + 1;
    const rule = injected.find((r) => r.remaining > 0 && (r.response.method === undefined || r.response.method === method));
    if (rule) {
      rule.remaining--;
      req.resume();
      req.on("end", () => {
        res.writeHead(rule.response.status, { "content-type": "application/xml", "x-ms-error-code": rule.response.code });
        res.end(errorXml(rule.response.code));
      });
      return;
    }
    const query = new URL(req.url ?? "/", "http://proxy").searchParams;
    const listing = ignoringMarkers !== false && method === "GET" && query.get("comp") === "list";
    if (listing && query.has("marker") && firstPage !== undefined) {
      const page = firstPage;
      const body =
        ignoringMarkers === "giving new ones"
          ? Buffer.from(page.body.toString("utf8").replace(/<NextMarker>([^<]+)<\/NextMarker>/, `<NextMarker>$1${++freshMarkers}</NextMarker>`), "utf8")
          : page.body;
      req.resume();
      req.on("end", () => {
        const { "transfer-encoding": _chunked, ...headers } = page.headers;
        res.writeHead(page.status, { ...headers, "content-length": String(body.length) });
        res.end(body);
      });
      return;
    }
    const upstream = httpRequest({ host: "127.0.0.1", port, method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (!listing) {
        up.pipe(res);
        return;
      }
      // A first page: kept, to answer the pages after it.
      const chunks: Buffer[] = [];
      up.on("data", (c: Buffer) => chunks.push(c));
      up.on("end", () => {
        firstPage = { status: up.statusCode ?? 502, headers: up.headers, body: Buffer.concat(chunks) };
        res.end(firstPage.body);
      });
    });
    upstream.on("error", () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  const listening = await listenOnLoopback(proxy);
  const endpoint = `http://127.0.0.1:${listening.port}/${AZURITE_ACCOUNT}`;
  const connectionString = `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_ACCOUNT_KEY};BlobEndpoint=${endpoint};`;
  const { BlobServiceClient } = await import("@azure/storage-blob");
  const admin = BlobServiceClient.fromConnectionString(
    `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_ACCOUNT_KEY};BlobEndpoint=http://127.0.0.1:${port}/${AZURITE_ACCOUNT};`,
  );

  return {
    endpoint,
    directEndpoint: `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`,
    account: AZURITE_ACCOUNT,
    accountKey: AZURITE_ACCOUNT_KEY,
    connectionString,
    requests,
    failNext(count, response) {
      injected.push({ remaining: count, response });
    },
    ignoreMarkers(on) {
      ignoringMarkers = on;
      firstPage = undefined;
    },
    async createContainer(name) {
      await admin.getContainerClient(name).createIfNotExists();
    },
    async stop() {
      proxy.closeAllConnections();
      await listening.close();
      await stopChild(child);
      await rm(workDir, { recursive: true, force: true });
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
