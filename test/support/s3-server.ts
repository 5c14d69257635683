/**
 * @module A real S3 protocol server on loopback for tests: s3rver, with a
 * temporary directory, one bucket, and a middleware in front of its routes.
 *
 * s3rver ignores `If-None-Match` on PUT and would overwrite. The middleware
 * answers 412 PreconditionFailed to a PUT carrying `If-None-Match: *` when
 * the key exists, as S3 does, and serialises PUT and DELETE per key so that
 * the check and the write are one step (concurrent creates: exactly one
 * wins). It can also be told to answer the next requests with an error, to
 * test retries (503 SlowDown, 500) and the 409 ConditionalRequestConflict
 * that some S3-compatible services return.
 *
 * The middleware also answers ListObjectsV2 itself, from the files s3rver
 * wrote, because s3rver's own listing differs from S3 in two ways the
 * conformance suite checks: it cannot paginate on current Node (its
 * continuation tokens are DES-encrypted, which OpenSSL 3 refuses, so any
 * listing past 1,000 keys answers 500), and it orders keys by its directory
 * walk and compares start-after in UTF-16 order instead of UTF-8 byte order.
 * A key deleted while the middleware reads its files for a page is left
 * out of the page, as S3 leaves out what is gone, rather than failing it.
 * Gets, puts and deletes are served by s3rver.
 *
 * s3rver streams a PUT's body into the object's file as it arrives, so a
 * client killed part way through its upload (the tests SIGKILL writers)
 * would leave a short object behind, and a GET racing a PUT could read one;
 * S3 stores a whole object or nothing. The middleware therefore reads each
 * PUT body in full first (an upload cut short is answered 400 and stores
 * nothing), answers a PUT only once the object's file holds the whole body,
 * and makes GET and HEAD of a key wait for a PUT of that key in progress.
 *
 * A ranged GET of an empty object is answered 416 InvalidRange, as S3 does:
 * s3rver answers 206 with a Content-Length of 1 and sends no byte, so the
 * client waits for the body until its attempt times out.
 *
 * `conditionalCreate: false` leaves `If-None-Match` to s3rver, which ignores
 * it: a server without conditional create, to prove that a writer refuses it.
 *
 * `listingFault` makes its listings answer as some S3-compatible services and
 * proxies do (see `ListingFault`), with pages of `pageKeys` keys.
 */
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import type { IncomingMessage, Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";

/** What the middleware sees of a Koa context. */
interface KoaContext {
  req: IncomingMessage | Buffer;
  method: string;
  path: string;
  query: Record<string, unknown>;
  get(header: string): string;
  status: number;
  type: string;
  body: unknown;
  set(header: string, value: string): void;
}
type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;

/** The part of s3rver's class used here (it ships no types). */
interface S3rverInstance {
  middleware: Middleware[];
  store: { existsObject(bucket: string, key: string): Promise<boolean> };
  run(): Promise<AddressInfo>;
  httpServer?: Server;
  close(): Promise<void>;
}
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;

/** An error the server will answer instead of serving a request. */
export interface InjectedResponse {
  status: number;
  code: string;
  /** Only requests with this method (e.g. `"PUT"`). Default: any object request. */
  method?: string;
}

/**
 * How the server's listings depart from S3's:
 * - `"ignores start-after"`: a listing's first page starts at the prefix's first key;
 * - `"ignores prefix"`: pages hold every key of the bucket (in order, after start-after);
 * - `"repeats pages"`: every page is answered twice, the second time for the continuation token of the first;
 * - `"ignores continuation tokens"`: every page is the first page again, with the same token;
 * - `"ignores continuation tokens, giving new ones"`: every page is the first page again, each time with a token never given before;
 * - `"truncated without token"`: a truncated page names no continuation token.
 */
export type ListingFault =
  | "ignores start-after"
  | "ignores prefix"
  | "repeats pages"
  | "ignores continuation tokens"
  | "ignores continuation tokens, giving new ones"
  | "truncated without token";

/** Listings as `ListingFault` describes, in pages of `pageKeys` keys (default 1,000). */
export interface ListingFaults {
  fault?: ListingFault;
  pageKeys?: number;
  /**
   * Before each page, this many empty truncated pages (as S3 answers while
   * it walks past delete markers), each under a token never given before,
   * or with `emptyTokens: "repeated"` each under the same token (never
   * getting past them).
   */
  emptyPages?: number;
  emptyTokens?: "fresh" | "repeated";
}

/** The token of the `count`th empty page before the page that `inner` (a token, "" for the first page) asks for. */
const EMPTY_TOKEN = /^empty:(\d+):([^:]*):\d+$/;

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  /** Client settings for this server: endpoint, path style, its fixed credentials, a region. */
  clientConfig: S3ClientConfig;
  /** Requests that reached the server, by HTTP method. */
  readonly requests: Record<string, number>;
  /** Answers the next `count` matching object requests with `response` instead of serving them. */
  failNext(count: number, response: InjectedResponse): void;
  /** Listings from now on as `faults` say; `{}` makes them S3's again. */
  listWith(faults: ListingFaults): void;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

function errorXml(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}

const OBJECT_SUFFIX = "._S3rver_object";

function xmlEscape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function queryString(ctx: KoaContext, name: string): string | undefined {
  const value = ctx.query[name];
  return typeof value === "string" ? value : undefined;
}

/** `undefined` for a file that is gone (ENOENT); any other failure is thrown again. */
function absentAsUndefined(err: unknown): undefined {
  if ((err as { code?: unknown }).code === "ENOENT") return undefined;
  throw err;
}

/** How many times a walk of the bucket starts again after a directory vanished under it. */
const WALK_ATTEMPTS = 100;

/**
 * Every file under `bucketDir`. s3rver removes a key's directories once a
 * delete empties them, and a recursive read fails when one vanishes between
 * being found and being read: the walk then starts again (an emptied
 * directory held no object).
 */
async function walkObjects(bucketDir: string): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await readdir(bucketDir, { recursive: true });
    } catch (err) {
      if ((err as { code?: unknown }).code !== "ENOENT" || attempt >= WALK_ATTEMPTS) throw err;
    }
  }
}

/**
 * ListObjectsV2 over s3rver's files (`<dir>/<bucket>/<key>._S3rver_object`):
 * UTF-8 byte order, prefix, start-after, at most 1,000 keys per page, and a
 * continuation token that is the base64 of the page's last key.
 */
/** Tokens given by `"ignores continuation tokens, giving new ones"`, so that each differs. */
let freshTokens = 0;

async function listObjectsV2(ctx: KoaContext, directory: string, faults: ListingFaults): Promise<void> {
  const { fault } = faults;
  const bucket = decodeURIComponent(ctx.path.replace(/^\/|\/$/g, ""));
  const bucketDir = join(directory, bucket);
  const prefix = queryString(ctx, "prefix") ?? "";
  const ignoresTokens = fault === "ignores continuation tokens" || fault === "ignores continuation tokens, giving new ones";
  let asked = ignoresTokens ? undefined : queryString(ctx, "continuation-token");
  if (faults.emptyPages !== undefined && faults.emptyPages > 0) {
    const empty = asked === undefined ? undefined : EMPTY_TOKEN.exec(asked);
    const count = empty === undefined || empty === null ? 0 : Number(empty[1]);
    if (count < faults.emptyPages) {
      // The page asked for, carried through the empty pages: a token, or the first page's start-after.
      const startAfter = queryString(ctx, "start-after");
      const inner = empty?.[2] ?? asked ?? (startAfter === undefined ? "" : Buffer.from(startAfter, "utf8").toString("base64"));
      const next = faults.emptyTokens === "repeated" ? `empty:1:${inner}:0` : `empty:${count + 1}:${inner}:${++freshTokens}`;
      ctx.status = 200;
      ctx.type = "application/xml";
      ctx.body = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
        `<Name>${xmlEscape(bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>`,
        "<IsTruncated>true</IsTruncated>",
        asked !== undefined ? `<ContinuationToken>${xmlEscape(asked)}</ContinuationToken>` : "",
        `<NextContinuationToken>${xmlEscape(next)}</NextContinuationToken>`,
        "</ListBucketResult>",
      ].join("");
      return;
    }
    asked = empty![2] || undefined;
  }
  // A token "again:<token>" serves the page of <token> a second time (see "repeats pages").
  const again = asked?.startsWith("again:") === true;
  const token = again ? asked!.slice("again:".length) || undefined : asked;
  const startAfter =
    token !== undefined ? Buffer.from(token, "base64").toString("utf8") : fault === "ignores start-after" ? undefined : queryString(ctx, "start-after");
  const maxKeys = Math.min(faults.pageKeys ?? 1000, Number(queryString(ctx, "max-keys") ?? 1000));
  const files = await walkObjects(bucketDir);
  const after = startAfter === undefined ? undefined : Buffer.from(startAfter, "utf8");
  const keys = files
    .filter((f) => f.endsWith(OBJECT_SUFFIX))
    .map((f) => f.slice(0, -OBJECT_SUFFIX.length).split(sep).join("/"))
    .filter((k) => (fault === "ignores prefix" || k.startsWith(prefix)) && (after === undefined || Buffer.compare(Buffer.from(k, "utf8"), after) > 0))
    .sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
  const page = keys.slice(0, maxKeys);
  const truncated = keys.length > page.length;
  const contents: string[] = [];
  for (const key of page) {
    const info = await stat(join(bucketDir, key + OBJECT_SUFFIX)).catch(absentAsUndefined);
    // Deleted since the walk: S3 lists what a listing's moment holds, never fails a page for a concurrent delete.
    if (info === undefined) continue;
    contents.push(
      `<Contents><Key>${xmlEscape(key)}</Key><LastModified>${info.mtime.toISOString()}</LastModified><Size>${info.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
    );
  }
  const last = page[page.length - 1];
  let next = truncated && last !== undefined ? Buffer.from(last, "utf8").toString("base64") : undefined;
  // The second answer starts where this one did.
  if (fault === "repeats pages" && truncated && !again) next = `again:${startAfter === undefined ? "" : Buffer.from(startAfter, "utf8").toString("base64")}`;
  if (fault === "truncated without token") next = undefined;
  if (fault === "ignores continuation tokens, giving new ones" && next !== undefined) next = `${next}.${++freshTokens}`;
  ctx.status = 200;
  ctx.type = "application/xml";
  ctx.body = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
    `<Name>${xmlEscape(bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys>`,
    `<IsTruncated>${truncated}</IsTruncated>`,
    token !== undefined ? `<ContinuationToken>${xmlEscape(token)}</ContinuationToken>` : "",
    next !== undefined ? `<NextContinuationToken>${xmlEscape(next)}</NextContinuationToken>` : "",
    ...contents,
    "</ListBucketResult>",
  ].join("");
}

/**
 * The whole body of a request, or undefined when the client went away
 * before sending as many bytes as its Content-Length promised.
 */
function readWholeBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const expected = req.headers["content-length"] === undefined ? undefined : Number(req.headers["content-length"]);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    req.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
    });
    req.on("end", () => resolve(expected === undefined || length === expected ? Buffer.concat(chunks) : undefined));
    req.on("aborted", () => resolve(undefined));
    req.on("error", () => resolve(undefined));
    req.on("close", () => {
      if (!req.complete) resolve(undefined);
    });
  });
}

/** How long a PUT's reply waits for s3rver's file write before failing the test: a hang, not slowness. */
const FILE_WRITE_LIMIT_MS = 60_000;

/**
 * Resolves once the file at `path` has `size` bytes (s3rver's write of a
 * whole body in flight). The first check almost always finds it written;
 * re-checks back off (1 ms doubling to 50 ms) instead of taking a file
 * system call every event-loop turn while the write lags.
 */
async function untilFileHolds(path: string, size: number): Promise<void> {
  const deadline = performance.now() + FILE_WRITE_LIMIT_MS;
  for (let delayMs = 1; ; delayMs = Math.min(delayMs * 2, 50)) {
    const info = await stat(path).catch(() => undefined);
    if (info !== undefined && info.size >= size) return;
    if (performance.now() >= deadline) throw new Error(`the test S3 server did not finish writing ${path}`);
    await new Promise<void>((resolve) => setTimeout(resolve, delayMs));
  }
}

/** The size of the file at `path`, or undefined when there is none (an absent object: s3rver answers it). */
async function fileSize(path: string): Promise<number | undefined> {
  return (await stat(path).catch(() => undefined))?.size;
}

/** Starts s3rver on 127.0.0.1 with an ephemeral port and a fresh temporary directory. */
export async function startS3Server(opts: { bucket?: string; conditionalCreate?: boolean } = {}): Promise<TestS3Server> {
  const conditionalCreate = opts.conditionalCreate ?? true;
  const S3rver = require("s3rver") as S3rverClass;
  const bucket = opts.bucket ?? "taquba-test";
  const directory = await mkdtemp(join(tmpdir(), "taquba-s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });

  const requests: Record<string, number> = {};
  const injected: { remaining: number; response: InjectedResponse }[] = [];
  const keyLocks = new Map<string, Promise<void>>();
  let listing: ListingFaults = {};

  const guard: Middleware = async (ctx, next) => {
    requests[ctx.method] = (requests[ctx.method] ?? 0) + 1;
    // Path style: /<bucket>/<key>, each segment percent-encoded by the SDK.
    const match = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
    const objectRequest = match !== null && !("uploads" in ctx.query) && !("uploadId" in ctx.query);
    const listRequest = /^\/[^/]+\/?$/.test(ctx.path) && ctx.method === "GET";
    const rule = injected.find(
      (r) => r.remaining > 0 && (objectRequest || listRequest) && (r.response.method === undefined || r.response.method === ctx.method),
    );
    if (rule) {
      rule.remaining--;
      ctx.status = rule.response.status;
      ctx.type = "application/xml";
      ctx.body = errorXml(rule.response.code, "injected by the test server");
      return;
    }
    if (listRequest && ctx.query["list-type"] === "2" && ctx.query["delimiter"] === undefined) {
      await listObjectsV2(ctx, directory, listing);
      return;
    }
    if (!match || !objectRequest) return next();
    const [, reqBucket, rawKey] = match as unknown as [string, string, string];
    const key = decodeURIComponent(rawKey);
    const lockId = `${reqBucket}/${key}`;
    if (ctx.method === "GET" || ctx.method === "HEAD") {
      await keyLocks.get(lockId);
      if (ctx.method === "GET" && ctx.get("range") !== "" && (await fileSize(join(directory, decodeURIComponent(reqBucket), key + OBJECT_SUFFIX))) === 0) {
        ctx.status = 416;
        ctx.type = "application/xml";
        ctx.body = errorXml("InvalidRange", "The requested range is not satisfiable");
        return;
      }
      return next();
    }
    if (ctx.method !== "PUT" && ctx.method !== "DELETE") return next();
    if (ctx.method === "PUT") {
      const body = await readWholeBody(ctx.req as IncomingMessage);
      if (body === undefined) {
        ctx.status = 400;
        ctx.type = "application/xml";
        ctx.body = errorXml("IncompleteBody", "The request body ended before its Content-Length");
        return;
      }
      // s3rver writes a Buffer body in one go.
      ctx.req = body;
    }
    // Serialise writes per key: wait for the previous one, then hold the lock.
    const previous = keyLocks.get(lockId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const chained = previous.then(() => mine);
    keyLocks.set(lockId, chained);
    await previous;
    try {
      if (
        conditionalCreate &&
        ctx.method === "PUT" &&
        ctx.get("if-none-match").trim() === "*" &&
        (await server.store.existsObject(decodeURIComponent(reqBucket), key))
      ) {
        ctx.status = 412;
        ctx.type = "application/xml";
        ctx.body = errorXml("PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
        return;
      }
      await next();
      // s3rver answers once it has handed the body to a file stream, which may not have written
      // it yet: hold the key (and the reply) until the file has it all.
      if (ctx.method === "PUT" && ctx.status === 200 && Buffer.isBuffer(ctx.req)) {
        await untilFileHolds(join(directory, decodeURIComponent(reqBucket), key + OBJECT_SUFFIX), ctx.req.length);
      }
    } finally {
      release();
      if (keyLocks.get(lockId) === chained) keyLocks.delete(lockId);
    }
  };
  // The router is the last middleware; the guard goes right before it.
  server.middleware.splice(server.middleware.length - 1, 0, guard);

  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  return {
    endpoint,
    bucket,
    clientConfig: {
      endpoint,
      forcePathStyle: true,
      region: "us-east-1",
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    },
    requests,
    failNext(count, response) {
      injected.push({ remaining: count, response });
    },
    listWith(faults) {
      listing = faults;
    },
    async stop() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
