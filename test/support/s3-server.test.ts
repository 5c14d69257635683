/**
 * @module The test S3 server stores a whole object or nothing, as S3 does:
 * an upload whose client goes away part way through leaves no object (and
 * does not hold the key's write lock forever).
 */
import { request, type ClientRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3Store } from "taquba";
import { startS3Server, type TestS3Server } from "./s3-server.js";
import { until } from "./until.js";

/** A raw PUT that announces `total` bytes; the caller writes the body and ends or destroys it. */
function rawPut(server: TestS3Server, key: string, total: number): { req: ClientRequest; status: Promise<number> } {
  const url = new URL(`${server.endpoint}/${server.bucket}/${encodeURIComponent(key)}`);
  const req = request(url, { method: "PUT", headers: { "content-length": String(total), "content-type": "application/octet-stream" } });
  const status = new Promise<number>((resolve) => {
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(-1));
  });
  return { req, status };
}

describe("the test S3 server", () => {
  let server: TestS3Server;
  let store: S3Store;
  beforeAll(async () => {
    server = await startS3Server();
    store = new S3Store({ bucket: server.bucket, clientConfig: server.clientConfig });
  });
  afterAll(async () => {
    await server.stop();
  });

  it("keeps nothing of an upload cut short, and the key can then be created", async () => {
    const puts = server.requests.PUT ?? 0;
    const { req, status } = rawPut(server, "wal/cut", 1000);
    req.write(Buffer.alloc(10, 7));
    // The server has the request (and is reading its body) before the client dies.
    await until("the PUT to reach the server", () => (server.requests.PUT ?? 0) > puts);
    req.destroy();
    expect(await status).toBe(-1);
    expect(await store.get("wal/cut")).toBeNull();
    await store.put("wal/cut", new Uint8Array([1, 2, 3]), { ifNoneMatch: "*" });
    expect(Array.from((await store.get("wal/cut"))!.body)).toEqual([1, 2, 3]);
  });
});
