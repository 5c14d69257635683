/**
 * @module A stand-in for the Cloud Storage JSON API on loopback, for testing
 * GcsStore where no GCS emulator installs. Written from Google's published
 * JSON API reference, it serves the subset GcsStore uses, in memory:
 *
 * - objects.insert as a multipart upload (`POST /upload/storage/v1/b/B/o`,
 *   `uploadType=multipart`, metadata part then media part) or a media upload
 *   (`uploadType=media&name=N`), with `ifGenerationMatch` (0: only if no live
 *   object; n: only if the live generation is n; else 412 conditionNotMet)
 *   and a check of a supplied `md5Hash` or `crc32c` (400 on mismatch);
 * - objects.get, as media (`alt=media`, with `x-goog-generation`,
 *   `x-goog-hash` and `x-goog-stored-content-encoding` headers) or metadata;
 * - objects.delete (204, or 404 "No such object");
 * - objects.list with `prefix`, `startOffset` (inclusive), `maxResults`
 *   (capped at 1,000) and `pageToken`, in UTF-8 byte order of names;
 * - JSON error bodies `{ error: { code, message, errors: [{ reason }] } }`,
 *   and 404 "The specified bucket does not exist." for unknown buckets.
 *
 * It does not model: authentication and IAM (any request is allowed),
 * resumable uploads, the XML API, `delimiter`/`endOffset`/`versions` in
 * listings, metageneration and `ifGenerationNotMatch` preconditions,
 * noncurrent versions, compose/rewrite/copy, gzip transcoding, retention and
 * holds, object name rules beyond non-empty, or rate limits (tests inject
 * 429/5xx with `failNext`). Requests are handled one at a time once their
 * body is read, so each create-if-absent is atomic, as on the service.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback, withBody } from "./loopback-server.js";

/** An error the server answers instead of serving a request. */
export interface InjectedGcsResponse {
  status: number;
  reason: string;
  /** Only requests with this method. Default: any. */
  method?: string;
}

export interface TestGcsServer {
  /** The JSON API endpoint, e.g. `http://127.0.0.1:PORT`. */
  endpoint: string;
  bucket: string;
  /** Requests that reached the server, by HTTP method. */
  readonly requests: Record<string, number>;
  failNext(count: number, response: InjectedGcsResponse): void;
  /**
   * From now on (true) every listing page is the first page again, with the same page token, as a service ignoring page tokens answers;
   * `"giving new ones"`: each time with a page token never given before.
   */
  ignorePageTokens(on: boolean | "giving new ones"): void;
  stop(): Promise<void>;
}

interface StoredGcsObject {
  data: Buffer;
  generation: number;
  contentType: string;
  updated: string;
}

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC32C (Castagnoli) of `data`, base64 of its big-endian bytes, as GCS reports it. */
export function crc32cBase64(data: Uint8Array): string {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC32C_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return out.toString("base64");
}

const md5Base64 = (data: Uint8Array) => createHash("md5").update(data).digest("base64");
const PAGE_LIMIT = 1000;
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=UTF-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, reason: string, message: string): void {
  sendJson(res, status, { error: { code: status, message, errors: [{ domain: "global", reason, message }] } });
}

/** Splits a multipart/related body into its parts' headers and bytes. */
function parseMultipart(body: Buffer, contentType: string): { headers: Record<string, string>; data: Buffer }[] | null {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (boundary === undefined) return null;
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: { headers: Record<string, string>; data: Buffer }[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    let start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    if (body.subarray(start, start + 2).toString() === "\r\n") start += 2;
    const end = body.indexOf(delimiter, start);
    if (end === -1) return null;
    const part = body.subarray(start, end);
    const split = part.indexOf("\r\n\r\n");
    if (split === -1) return null;
    const headers: Record<string, string> = {};
    for (const line of part.subarray(0, split).toString("utf8").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    // The part's data ends before the CRLF that precedes the next delimiter.
    let data = part.subarray(split + 4);
    if (data.subarray(data.length - 2).toString() === "\r\n") data = data.subarray(0, data.length - 2);
    parts.push({ headers, data });
    at = end;
  }
  return parts;
}

/** Starts the stand-in on 127.0.0.1 with one empty bucket. */
export async function startGcsServer(opts: { bucket?: string } = {}): Promise<TestGcsServer> {
  let ignoringTokens: boolean | "giving new ones" = false;
  let freshTokens = 0;
  const bucket = opts.bucket ?? "taquba-test";
  const buckets = new Map<string, Map<string, StoredGcsObject>>([[bucket, new Map()]]);
  const requests: Record<string, number> = {};
  const injected: { remaining: number; response: InjectedGcsResponse }[] = [];
  let nextGeneration = Date.now() * 1000;
  let endpoint = "";

  const resource = (bucketName: string, name: string, o: StoredGcsObject) => ({
    kind: "storage#object",
    id: `${bucketName}/${name}/${o.generation}`,
    selfLink: `${endpoint}/storage/v1/b/${bucketName}/o/${encodeURIComponent(name)}`,
    mediaLink: `${endpoint}/download/storage/v1/b/${bucketName}/o/${encodeURIComponent(name)}?generation=${o.generation}&alt=media`,
    name,
    bucket: bucketName,
    generation: String(o.generation),
    metageneration: "1",
    contentType: o.contentType,
    storageClass: "STANDARD",
    size: String(o.data.byteLength),
    md5Hash: md5Base64(o.data),
    crc32c: crc32cBase64(o.data),
    etag: Buffer.from(String(o.generation)).toString("base64"),
    timeCreated: o.updated,
    updated: o.updated,
  });

  const handle = (req: IncomingMessage, body: Buffer, res: ServerResponse) => {
    const method = req.method ?? "GET";
    requests[method] = (requests[method] ?? 0) + 1;
    const rule = injected.find((r) => r.remaining > 0 && (r.response.method === undefined || r.response.method === method));
    if (rule) {
      rule.remaining--;
      sendError(res, rule.response.status, rule.response.reason, "injected by the test server");
      return;
    }
    const url = new URL(req.url ?? "/", "http://localhost");
    const q = url.searchParams;
    const route = /^\/(upload\/|download\/)?storage\/v1\/b\/([^/]+)\/o(?:\/(.+))?$/.exec(url.pathname);
    if (!route) return sendError(res, 404, "notFound", `Not Found: ${url.pathname}`);
    const [, kind, rawBucket, rawName] = route;
    const bucketName = decodeURIComponent(rawBucket!);
    const objects = buckets.get(bucketName);
    if (!objects) return sendError(res, 404, "notFound", "The specified bucket does not exist.");

    if (kind === "upload/" && method === "POST" && rawName === undefined) {
      let name: string | undefined = q.get("name") ?? undefined;
      let data: Buffer;
      let metadata: { name?: string; contentType?: string; md5Hash?: string; crc32c?: string } = {};
      const uploadType = q.get("uploadType");
      if (uploadType === "multipart") {
        const parts = parseMultipart(body, req.headers["content-type"] ?? "");
        if (parts?.length !== 2) return sendError(res, 400, "invalid", "Invalid multipart request");
        try {
          metadata = JSON.parse(parts[0]!.data.toString("utf8")) as typeof metadata;
        } catch {
          return sendError(res, 400, "parseError", "Metadata part is not JSON");
        }
        name = metadata.name ?? name;
        data = parts[1]!.data;
      } else if (uploadType === "media") {
        data = body;
      } else {
        return sendError(res, 400, "invalid", `uploadType ${uploadType ?? "(none)"} is not served by this stand-in`);
      }
      if (!name) return sendError(res, 400, "required", "Required: object name");
      if (metadata.md5Hash !== undefined && metadata.md5Hash !== md5Base64(data)) {
        return sendError(res, 400, "invalid", "Provided MD5 hash does not match calculated MD5 hash.");
      }
      if (metadata.crc32c !== undefined && metadata.crc32c !== crc32cBase64(data)) {
        return sendError(res, 400, "invalid", "Provided CRC32C does not match calculated CRC32C.");
      }
      const condition = q.get("ifGenerationMatch");
      if (condition !== null) {
        const live = objects.get(name);
        const holds = condition === "0" ? live === undefined : live !== undefined && String(live.generation) === condition;
        if (!holds) return sendError(res, 412, "conditionNotMet", "At least one of the pre-conditions you specified did not hold.");
      }
      const stored: StoredGcsObject = {
        data: Buffer.from(data),
        generation: ++nextGeneration,
        contentType: metadata.contentType ?? req.headers["x-upload-content-type"]?.toString() ?? "application/octet-stream",
        updated: new Date().toISOString(),
      };
      objects.set(name, stored);
      return sendJson(res, 200, resource(bucketName, name, stored));
    }

    if (kind === undefined && rawName !== undefined) {
      const name = decodeURIComponent(rawName);
      const found = objects.get(name);
      if (method === "DELETE") {
        if (!found) return sendError(res, 404, "notFound", `No such object: ${bucketName}/${name}`);
        objects.delete(name);
        res.writeHead(204);
        res.end();
        return;
      }
      if (method === "GET") {
        if (!found) return sendError(res, 404, "notFound", `No such object: ${bucketName}/${name}`);
        if (q.get("alt") !== "media") return sendJson(res, 200, resource(bucketName, name, found));
        res.writeHead(200, {
          "content-type": found.contentType,
          "content-length": found.data.byteLength,
          "x-goog-generation": String(found.generation),
          "x-goog-metageneration": "1",
          "x-goog-stored-content-encoding": "identity",
          "x-goog-stored-content-length": String(found.data.byteLength),
          "x-goog-hash": `crc32c=${crc32cBase64(found.data)},md5=${md5Base64(found.data)}`,
          etag: Buffer.from(String(found.generation)).toString("base64"),
        });
        res.end(found.data);
        return;
      }
    }

    if (kind === undefined && rawName === undefined && method === "GET") {
      const prefix = q.get("prefix") ?? "";
      const startOffset = q.get("startOffset");
      const token = ignoringTokens !== false ? null : q.get("pageToken");
      const after = token ? Buffer.from(token, "base64").toString("utf8") : undefined;
      const max = Math.min(PAGE_LIMIT, Math.max(1, Number(q.get("maxResults") ?? PAGE_LIMIT) || PAGE_LIMIT));
      const names = [...objects.keys()]
        .filter((n) => n.startsWith(prefix))
        .filter((n) => startOffset === null || byteOrder(n, startOffset) >= 0)
        .filter((n) => after === undefined || byteOrder(n, after) > 0)
        .sort(byteOrder);
      const page = names.slice(0, max);
      const more = names.length > page.length;
      return sendJson(res, 200, {
        kind: "storage#objects",
        items: page.map((n) => resource(bucketName, n, objects.get(n)!)),
        ...(more
          ? {
              nextPageToken: `${Buffer.from(page[page.length - 1]!, "utf8").toString("base64")}${ignoringTokens === "giving new ones" ? `.${++freshTokens}` : ""}`,
            }
          : {}),
      });
    }
    return sendError(res, 405, "methodNotAllowed", `${method} ${url.pathname} is not served by this stand-in`);
  };

  const server = createServer(withBody(handle));
  const listening = await listenOnLoopback(server);
  endpoint = `http://127.0.0.1:${listening.port}`;
  return {
    endpoint,
    bucket,
    requests,
    failNext(count, response) {
      injected.push({ remaining: count, response });
    },
    ignorePageTokens(on) {
      ignoringTokens = on;
    },
    async stop() {
      server.closeAllConnections();
      await listening.close();
    },
  };
}
