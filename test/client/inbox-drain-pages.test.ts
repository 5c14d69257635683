/**
 * @module The client inbox drains in pages: a pass lists at most
 * `INBOX_LIST_PAGE` requests at a time and lists on after the last, so an
 * inbox of thousands of requests is never held whole, and each request is
 * still applied once, in order: over a store that ignores the key to start
 * after, a listing that repeats keys (still refused), and an owner
 * SIGKILLed mid-drain whose successor finishes the inbox (triggers of a
 * schedule, where a request applied twice would start a second run).
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import {
  LocalStore,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  serveClients,
  StoreRequestError,
  WorkflowRuntime,
  type ClientInbox,
  type ListedObject,
  type ListOptions,
  type ObjectStore,
} from "taquba";
import { INBOX_LIST_PAGE } from "../../runtime/client/inbox-server.js";
import { KEEP_NAME, requestIds } from "../../runtime/client/inbox-layout.js";
import { decodeAnswer, encodeRequest } from "../../runtime/client/request-codec.js";
import { CarelessListings } from "../support/careless-listings.js";
import { startScript } from "../support/child-script.js";
import { DisorderedListings } from "../support/disordered-listings.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { appRunner, openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const OWNER = fileURLToPath(new URL("./fixtures/owner-process.ts", import.meta.url));
const tempDir = useTempDirs("taquba-inbox-pages-");
const requests = `${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`;
const answers = `${STORE_NAME}/inbox/${STEP_QUEUE}/answers/`;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** `inner`, recording how many keys each listing of the requests folder handed out and which requests were read, in order. */
class WatchedInbox extends ForwardingStore {
  readonly listed: number[] = [];
  readonly read: string[] = [];

  override get(key: string) {
    if (key.startsWith(requests)) this.read.push(key.slice(requests.length));
    return super.get(key);
  }

  override list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const inner = super.list(prefix, opts);
    if (!prefix.startsWith(requests)) return inner;
    const i = this.listed.push(0) - 1;
    const listed = this.listed;
    return (async function* () {
      for await (const o of inner) {
        listed[i]!++;
        yield o;
      }
    })();
  }
}

/** A queue over a MemoryStore, its inbox served through `serving` (over the same store); passes only when the test drains. */
async function served(serving: (store: MemoryStore) => ObjectStore) {
  const store = new MemoryStore();
  const clock = new MockClock();
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const failures: unknown[] = [];
  const inbox: ClientInbox = serveClients(queue, runtime, {
    store: serving(store),
    listIntervalMs: 3_600_000,
    logger: { error: (fields: unknown) => failures.push((fields as { err?: unknown }).err) },
  });
  closers.push(async () => {
    await inbox.stop();
    await queue.close();
  });
  await inbox.drain().catch(() => {});
  failures.length = 0;
  return { store, clock, inbox, failures };
}

/** Writes `n` signal requests (each its own key), in the order of their ids; returns the ids. */
async function writeSignals(store: ObjectStore, clock: MockClock, n: number): Promise<string[]> {
  const ids = requestIds();
  const written: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = ids(clock.now());
    written.push(id);
    await store.put(`${requests}${id}`, encodeRequest({ op: "signal", key: `k${i}`, payload: new Uint8Array([i & 0xff]) }));
  }
  return written;
}

async function names(store: ObjectStore, folder: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(folder)) if (!o.key.endsWith(`/${KEEP_NAME}`)) out.push(o.key.slice(folder.length));
  return out;
}

describe("the client inbox drains in pages", () => {
  it("applies thousands of requests once each, in order, listing at most a page of them at a time", async () => {
    let watched: WatchedInbox | undefined;
    const { store, clock, inbox } = await served((s) => (watched = new WatchedInbox(s)));
    const n = 2 * INBOX_LIST_PAGE + 500;
    const written = await writeSignals(store, clock, n);
    watched!.listed.length = 0;
    watched!.read.length = 0;
    expect(await inbox.drain()).toBe(n);
    expect(inbox.stats.applied).toBe(n);
    expect(watched!.read).toEqual(written);
    expect(Math.max(...watched!.listed)).toBe(INBOX_LIST_PAGE);
    // Three full pages' worth of listings: 1000, 1000, 500 and the placeholder.
    expect(watched!.listed).toHaveLength(3);
    expect(await names(store, requests)).toEqual([]);
    expect(await names(store, answers)).toEqual(written);
  }, 120_000);

  it("applies each once over a store that ignores the key to start after, and still refuses one that lists a key twice", async () => {
    const careless = await served((s) => new CarelessListings(s, "startAfter"));
    const n = INBOX_LIST_PAGE + 200;
    const written = await writeSignals(careless.store, careless.clock, n);
    expect(await careless.inbox.drain()).toBe(n);
    expect(careless.inbox.stats.applied).toBe(n);
    expect(await names(careless.store, answers)).toEqual(written);

    const twice = await served((s) => new DisorderedListings(s, "each key twice"));
    const kept = await writeSignals(twice.store, twice.clock, n);
    const err = await twice.inbox.drain().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as Error).message).toMatch(/the store given to serveClients listed .* out of key order or a second time/);
    expect(twice.inbox.stats.applied).toBe(0);
    expect(await names(twice.store, requests)).toEqual(kept);
  }, 120_000);

  // A child owner over a directory store, killed part way through 1,200 requests, then an owner in this
  // process: tens of seconds at load 40 on two cores (starting the child alone is several).
  it(
    "an owner SIGKILLed mid-drain leaves its successor every request to apply once: no trigger starts a second run",
    { timeout: loadLimitTimeout(120_000) },
    () =>
      withinLoadLimit(120_000, async () => {
        const dir = await tempDir();
        const store = new LocalStore(dir);
        const schedules = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"];
        const setup = await openOwner(store, { flushIntervalMs: 0 });
        // Once a year: no tick falls in the test.
        for (const id of schedules) await setup.runtime.schedules.upsert({ id, cron: "0 0 1 1 *", run: { input: new TextEncoder().encode("{}") } });
        await setup.stop();
        const n = INBOX_LIST_PAGE + 200;
        const ids = requestIds();
        const written: string[] = [];
        const start = Date.now() - 60_000;
        for (let i = 0; i < n; i++) {
          // Each at its own millisecond: a trigger's run is named by its request's time.
          const id = ids(start + i);
          written.push(id);
          await store.put(`${requests}${id}`, encodeRequest({ op: "schedule", action: "trigger", scheduleId: schedules[i % schedules.length]! }));
        }
        const child = startScript(OWNER, [pathToFileURL(dir).href, "50"]);
        await child.waitFor((l) => l.includes("ready"));
        // Killed once it has answered part of the first page.
        await until("the first owner answered 200 requests", async () => (await names(store, answers)).length >= 200, 100_000);
        expect((await child.kill()).signal).toBe("SIGKILL");
        const left = await names(store, requests);
        expect(left.length).toBeGreaterThan(0);

        const next = await openOwner(store, { listIntervalMs: 3_600_000 });
        closers.push(() => next.stop());
        while ((await names(store, requests)).length > 0) await next.inbox.drain();
        expect(await names(store, answers)).toEqual(written);
        const runIds: string[] = [];
        for (const id of written) {
          const answer = decodeAnswer((await store.get(`${answers}${id}`))!.body);
          expect(answer, id).toMatchObject({ ok: true, value: { newlySubmitted: true } });
          runIds.push((answer as { value: { runId: string } }).value.runId);
        }
        // One run per request: a request applied twice would have started a second (named `..._2`).
        expect(new Set(runIds).size).toBe(n);
        const runs: string[] = [];
        for (let cursor: string | undefined; ; ) {
          const page = await next.runtime.view().listRuns({ limit: 500, ...(cursor === undefined ? {} : { cursor }) });
          runs.push(...page.runs.map((r) => r.runId));
          if (page.nextCursor === undefined) break;
          cursor = page.nextCursor;
        }
        expect(runs.sort()).toEqual([...runIds].sort());
      }),
  );
});
