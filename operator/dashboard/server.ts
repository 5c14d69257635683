/**
 * @module The dashboard's web server: node:http serving the page (static
 * files from public/) and a JSON API over `Operations`, plus a stream of
 * server-sent events that tells open pages when the owner's durable state
 * changed.
 *
 * Cost on a bucket: the read view is refreshed at most once per poll
 * interval, however many pages and requests there are, and only while a
 * page is open (an event stream is connected) or a request arrives. Every
 * listing is then answered from the refreshed view in memory; only a run's
 * result, a group's manifest, queue health (a WAL listing) and the owners
 * page (each shard's lease and backlog) read the bucket again. On a sharded
 * store the refresh covers every shard's view, and the merged listings go
 * through the client, which reads each shard's latest state per page.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StoreCorruptedError, TaqubaError, ValidationError } from "../../runtime/errors.js";
import { corruptionText, damageWithWords, withDamageText } from "../inspect/damage-text.js";
import { checkOptionalFunction, describeValue, readExactOptions } from "../../runtime/option-values.js";
import { RUN_LIST_STATES, type RunListState } from "../../runtime/workflow/runs/run-listing.js";
import { checkRepairOptions, setRepairOptions } from "../../runtime/workflow/runs/repair.js";
import { checkRetryOptions } from "../../runtime/workflow/runs/redrive.js";
import { checkRecountOptions } from "../../runtime/queue/stats-recount.js";
import { RunId } from "../../runtime/workflow/runs/run-id.js";
import { encodeJsonPayload } from "../inspect/json-payload.js";
import { RedriveRefusedError, type Operations } from "../inspect/operations.js";
import { authorized, bindingProblem, hostAllowed, tokenCookie, writeAllowed } from "./access.js";
import { findAssets, type Assets } from "./assets.js";

/** Default interval between two refreshes of the read view while a page is open. */
export const DEFAULT_POLL_INTERVAL_MS = 2000;
/** Largest request body accepted (a signal payload and its key). */
const MAX_BODY_BYTES = 512 * 1024;

export interface DashboardOptions {
  readonly ops: Operations;
  /** Reads what the owner made durable since; true when something changed. */
  readonly refresh: () => Promise<boolean>;
  /** Shown in the page header. */
  readonly info: { readonly name: string; readonly stepQueue: string; readonly store: string };
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  readonly token?: string;
  readonly pollIntervalMs?: number;
}

export interface Dashboard {
  /** The page's address (with the token, when one is set). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** A failure with its HTTP status and message for the page. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

function statusOf(e: unknown): number {
  if (e instanceof HttpError) return e.status;
  if (e instanceof RedriveRefusedError) return e.reason === "not_found" ? 404 : 409;
  if (e instanceof TaqubaError) {
    if (e.code === "VALIDATION" || e.code === "INVALID_RUN_ID") return 400;
    if (e.code.endsWith("_NOT_FOUND")) return 404;
    if (e.code === "RUN_NOT_RETRYABLE" || e.code === "RUN_NOT_DAMAGED" || e.code === "REPAIR_PLAN_CHANGED" || e.code === "STATS_PLAN_CHANGED") return 409;
    if (e.code === "CLIENT_TIMEOUT") return 504;
  }
  return 500;
}

function send(res: ServerResponse, status: number, type: string, body: string | Uint8Array): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": type });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(
    res,
    status,
    "application/json; charset=utf-8",
    JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? { base64: Buffer.from(v).toString("base64") } : v)),
  );
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.byteLength;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(c);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "the request body is not JSON");
  }
}

/** An id taken from the path (a run's, a group's, a job's), percent-decoded; a malformed encoding is the request's fault, not the server's. */
function pathId(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, `the path holds ${JSON.stringify(raw)}, whose percent-encoding is malformed; encode the id with encodeURIComponent`);
  }
}

function field(body: unknown, name: string): unknown {
  return body !== null && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined;
}

/** A recount's body: `dryRun`, `plan` and (on a sharded store) `shard`; any other field is refused. */
function recountBody(body: unknown): { dryRun?: unknown; plan?: unknown; shard?: number } {
  const given = readExactOptions(body, ["dryRun", "plan", "shard"] as const, "the recount's body");
  const { shard, ...opts } = given;
  if (shard === undefined || shard === null) return opts;
  if (typeof shard !== "number" || !Number.isSafeInteger(shard) || shard < 0)
    throw new HttpError(400, "shard must be the number of the shard whose stats to recount");
  return { ...opts, shard };
}

/** A query parameter as a positive integer (limits), or undefined. */
function intParam(url: URL, name: string, max: number): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === "") return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1 || n > max) throw new HttpError(400, `${name} must be a whole number from 1 to ${max}`);
  return n;
}

/** The `shard` query parameter (a shard's number), or undefined. */
function shardParam(url: URL): number | undefined {
  const raw = url.searchParams.get("shard");
  if (raw === null || raw === "") return undefined;
  if (!/^\d{1,6}$/.test(raw)) throw new HttpError(400, "shard must be a shard's number");
  return Number(raw);
}

function strParam(url: URL, name: string): string | undefined {
  const v = url.searchParams.get(name);
  return v === null || v === "" ? undefined : v;
}

/** Shares one refresh among concurrent callers and skips it when the last one is recent. */
class Freshness {
  #last = 0;
  #running: Promise<boolean> | undefined;

  constructor(
    private readonly refresh: () => Promise<boolean>,
    private readonly maxAgeMs: number,
  ) {}

  ensure(force = false): Promise<boolean> {
    if (this.#running !== undefined) return this.#running;
    if (!force && Date.now() - this.#last < this.maxAgeMs) return Promise.resolve(false);
    const p = this.refresh().finally(() => {
      this.#last = Date.now();
      this.#running = undefined;
    });
    this.#running = p;
    return p;
  }
}

type Handler = (url: URL, req: IncomingMessage, match: RegExpMatchArray) => Promise<unknown>;

const DASHBOARD_KEYS = ["ops", "refresh", "info", "host", "port", "token", "pollIntervalMs"] as const satisfies readonly (keyof DashboardOptions)[];

export async function startDashboard(given: DashboardOptions): Promise<Dashboard> {
  // Each field read once: the token every request is checked against is the one checked here.
  const opts = readExactOptions(given, DASHBOARD_KEYS, "DashboardOptions") as DashboardOptions;
  for (const k of ["host", "token"] as const) {
    if (opts[k] !== undefined && typeof opts[k] !== "string")
      throw new ValidationError(`DashboardOptions.${k} must be a string, got ${describeValue(opts[k])}`);
  }
  checkOptionalFunction("DashboardOptions.refresh", opts.refresh);
  if (opts.refresh === undefined) throw new ValidationError("DashboardOptions.refresh must be a function that reads what the owner made durable");
  if (opts.port !== undefined && (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65_535))
    throw new ValidationError(`DashboardOptions.port must be a whole number from 0 to 65535 (0 picks a free port), got ${describeValue(opts.port)}`);
  const host = opts.host ?? "127.0.0.1";
  const problem = bindingProblem(host, opts.token);
  if (problem !== undefined) throw new ValidationError(problem);
  const pollMs = opts.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  if (!Number.isInteger(pollMs) || pollMs < 200 || pollMs > 3_600_000)
    throw new ValidationError(`DashboardOptions.pollIntervalMs (the poll interval) must be 200 to 3,600,000 ms, got ${describeValue(pollMs)}`);
  const assets: Assets = await findAssets();
  const fresh = new Freshness(opts.refresh, pollMs);
  const { ops } = opts;

  const reads: [RegExp, Handler][] = [
    [/^\/api\/info$/, async () => ({ ...opts.info, pollIntervalMs: pollMs, shards: await ops.shardCount() })],
    [/^\/api\/health$/, () => ops.health()],
    [/^\/api\/queues$/, async () => ({ at: Date.now(), shards: await ops.healthByShard() })],
    [/^\/api\/owners$/, async () => ({ at: Date.now(), owners: await ops.owners() })],
    [
      /^\/api\/runs$/,
      (url) => {
        const state = strParam(url, "state");
        if (state !== undefined && !(RUN_LIST_STATES as readonly string[]).includes(state))
          throw new HttpError(400, `state must be one of ${RUN_LIST_STATES.join(", ")}`);
        const workflow = strParam(url, "workflow");
        const cursor = strParam(url, "cursor");
        const limit = intParam(url, "limit", 1000);
        return ops.runs({
          ...(state === undefined ? {} : { state: state as RunListState }),
          ...(workflow === undefined ? {} : { workflow }),
          ...(cursor === undefined ? {} : { cursor }),
          ...(limit === undefined ? {} : { limit }),
        });
      },
    ],
    [
      /^\/api\/runs\/([^/]+)$/,
      async (url, _req, m) => {
        // The part of a parent's children whose entries the page checks: one read's worth, after this child.
        const childrenAfter = strParam(url, "children_after");
        if (childrenAfter !== undefined && !RunId.isValid(childrenAfter)) throw new HttpError(400, "children_after must be a child's run id");
        const historyAfter = strParam(url, "history_after");
        if (historyAfter !== undefined && !/^(0|[1-9][0-9]{0,14})$/.test(historyAfter)) throw new HttpError(400, "history_after must be a step number");
        const detail = await ops.run(pathId(m[1]!), childrenAfter, historyAfter === undefined ? undefined : Number(historyAfter));
        if (detail === null) throw new HttpError(404, "no record of this run: never submitted to this step queue, or ended and swept");
        return detail;
      },
    ],
    [
      /^\/api\/waiting$/,
      (url) => {
        const cursor = strParam(url, "cursor");
        return ops.waiting(cursor === undefined ? {} : { cursor });
      },
    ],
    [
      /^\/api\/dead$/,
      (url) => {
        const queue = strParam(url, "queue");
        const after = strParam(url, "after");
        const shard = shardParam(url);
        return ops
          .deadByShard({
            limit: intParam(url, "limit", 1000) ?? 100,
            ...(queue === undefined ? {} : { queue }),
            ...(after === undefined ? {} : { after }),
            ...(shard === undefined ? {} : { shard }),
          })
          .then((shards) => ({ shards }));
      },
    ],
    [
      /^\/api\/groups$/,
      (url) => {
        const cursor = strParam(url, "cursor");
        return ops.groups(cursor === undefined ? {} : { cursor });
      },
    ],
    [
      /^\/api\/groups\/([^/]+)$/,
      async (_url, _req, m) => {
        const g = await ops.group(pathId(m[1]!));
        if (g === null) throw new HttpError(404, "no such run group in this step queue: never submitted, or forgotten");
        return g;
      },
    ],
  ];

  const writes: [RegExp, Handler][] = [
    [/^\/api\/runs\/([^/]+)\/cancel$/, (_url, _req, m) => ops.cancel(pathId(m[1]!))],
    [
      /^\/api\/runs\/([^/]+)\/retry$/,
      async (_url, req, m) => {
        const runId = pathId(m[1]!);
        // The whole body is the options: a field the retry does not take (a misspelt fromStep) is refused, not ignored.
        const fromStep = checkRetryOptions(await readBody(req));
        return ops.retryRun(runId, fromStep === undefined ? {} : { fromStep });
      },
    ],
    [
      /^\/api\/runs\/([^/]+)\/repair$/,
      async (_url, req, m) => {
        const runId = pathId(m[1]!);
        // The whole body is the options: a field the repair does not take (a misspelt dryRun) is refused, not ignored.
        const out = await ops.repair(runId, setRepairOptions(checkRepairOptions(await readBody(req))));
        // The page words the damage as the operator's tools do, from here.
        return { ...out, damaged: out.damaged.map(damageWithWords) };
      },
    ],
    [/^\/api\/jobs\/([^/]+)\/retry$/, (_url, _req, m) => ops.retryJob(pathId(m[1]!))],
    [
      /^\/api\/queues\/([^/]+)\/recount$/,
      async (_url, req, m) => {
        const queueName = pathId(m[1]!);
        // The body is the options and, on a sharded store, the shard: any other field (a misspelt dryRun) is refused.
        const { shard, ...opts } = recountBody(await readBody(req));
        return ops.recountStats(queueName, checkRecountOptions(opts), shard);
      },
    ],
    [
      /^\/api\/dead\/([^/]+)\/redrive$/,
      async (_url, req, m) => {
        const shard = field(await readBody(req), "shard");
        if (shard !== undefined && shard !== null && (typeof shard !== "number" || !Number.isSafeInteger(shard) || shard < 0))
          throw new HttpError(400, "shard must be the number of the shard holding the job");
        return ops.redrive(pathId(m[1]!), typeof shard === "number" ? shard : undefined);
      },
    ],
    [
      /^\/api\/signals$/,
      async (_url, req) => {
        const body = await readBody(req);
        const key = field(body, "key");
        const json = field(body, "json");
        if (typeof key !== "string" || key === "") throw new HttpError(400, "key must be the signal's correlation key");
        if (typeof json !== "string") throw new HttpError(400, "json must be the payload as JSON text");
        return ops.signal(key, encodeJsonPayload(json));
      },
    ],
  ];

  // Open event streams; the poll loop runs only while there is one. A stream opened with
  // `owners=1` (the owners page) is also told of lease changes and renewals, which touch
  // no queue store: the leases are read only while such a stream is open.
  const streams = new Map<ServerResponse, { owners: boolean }>();
  let timer: NodeJS.Timeout | undefined;
  let lastLeases: string | undefined;
  const tick = async (): Promise<void> => {
    timer = undefined;
    let changed = false;
    let leasesChanged = false;
    try {
      changed = await fresh.ensure(true);
      if ([...streams.values()].some((s) => s.owners)) {
        const leases = JSON.stringify(await ops.leases());
        leasesChanged = lastLeases !== undefined && leases !== lastLeases;
        lastLeases = leases;
      } else lastLeases = undefined;
    } catch (e) {
      for (const s of streams.keys()) s.write(`event: problem\ndata: ${JSON.stringify(e instanceof Error ? e.message : String(e))}\n\n`);
    }
    for (const [s, wants] of streams) if (changed || (leasesChanged && wants.owners)) s.write(`event: change\ndata: ${Date.now()}\n\n`);
    if (streams.size > 0) timer = setTimeout(() => void tick(), pollMs);
  };

  let port = opts.port ?? 4400;
  const origin = (hostHeader: string) => `http://${hostHeader}`;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://dashboard.invalid");
    if (!hostAllowed(req, host, port)) return send(res, 421, "text/plain; charset=utf-8", "this dashboard answers only to the address it was started on\n");
    if (!authorized(req, url, opts.token)) return sendJson(res, 401, { error: { message: "this dashboard needs its token: open the address it printed" } });
    const path = url.pathname;
    if (req.method === "GET" || req.method === "HEAD") {
      const asset = assets.get(path === "/" ? "/index.html" : path);
      if (asset !== undefined) {
        if (opts.token !== undefined && path === "/") res.setHeader("set-cookie", tokenCookie(opts.token));
        return send(res, 200, asset.type, asset.body);
      }
      if (path === "/api/events") {
        res.writeHead(200, { ...SECURITY_HEADERS, "content-type": "text/event-stream; charset=utf-8", connection: "keep-alive" });
        res.write(`retry: ${pollMs}\n\n`);
        streams.set(res, { owners: url.searchParams.get("owners") === "1" });
        req.on("close", () => streams.delete(res));
        if (timer === undefined) timer = setTimeout(() => void tick(), pollMs);
        return;
      }
      const route = reads.find(([re]) => re.test(path));
      if (route === undefined) return sendJson(res, 404, { error: { message: `no such page: ${path}` } });
      await fresh.ensure();
      return sendJson(res, 200, await route[1](url, req, path.match(route[0])!));
    }
    if (req.method === "POST") {
      const route = writes.find(([re]) => re.test(path));
      if (route === undefined) return sendJson(res, 404, { error: { message: `no such action: ${path}` } });
      if (!writeAllowed(req, origin)) return sendJson(res, 403, { error: { message: "actions must come from the dashboard's own page, as JSON" } });
      const result = await route[1](url, req, path.match(route[0])!);
      // The owner applied the write: the next read should see it.
      await fresh.ensure(true).catch(() => false);
      for (const s of streams.keys()) s.write(`event: change\ndata: ${Date.now()}\n\n`);
      return sendJson(res, 200, result);
    }
    res.setHeader("allow", "GET, HEAD, POST");
    return sendJson(res, 405, { error: { message: `method ${req.method ?? "?"} not allowed` } });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status = statusOf(e);
      const damage = e instanceof StoreCorruptedError ? corruptionText(e) : undefined;
      const message = damage ?? withDamageText(e instanceof Error ? e.message : String(e));
      sendJson(res, status, { error: { message, ...(e instanceof TaqubaError ? { code: e.code } : {}) } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const url = `http://${shownHost === "0.0.0.0" || shownHost === "[::]" ? "127.0.0.1" : shownHost}:${port}/${opts.token === undefined ? "" : `?token=${encodeURIComponent(opts.token)}`}`;
  return {
    url,
    port,
    async close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      for (const s of streams.keys()) s.end();
      streams.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
