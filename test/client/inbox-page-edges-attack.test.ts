/**
 * @module The client inbox's pages at their edges: an inbox of exactly one
 * page of requests and of one more, each applied once and in order, the
 * pass listing on after the last name and stopping at the first short
 * page; and a store whose listing fails between two pages: the pass
 * rejects with the store's failure, the first page stays applied, and the
 * next pass applies the rest once, none skipped nor answered twice; and
 * an owner SIGKILLed near the end of its first page of one page and one more
 * schedule triggers, whose successor applies every one once.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ClientInbox,
  type ListedObject,
  type ListOptions,
  LocalStore,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  type ObjectStore,
  Queue,
  serveClients,
  StoreRequestError,
  WorkflowRuntime,
} from "taquba";
import { KEEP_NAME, requestIds } from "../../runtime/client/inbox-layout.js";
import { INBOX_LIST_PAGE } from "../../runtime/client/inbox-server.js";
import { decodeAnswer, encodeRequest } from "../../runtime/client/request-codec.js";
import { startScript } from "../support/child-script.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { appRunner, openOwner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const OWNER = fileURLToPath(new URL("./fixtures/owner-process.ts", import.meta.url));
const tempDir = useTempDirs("taquba-inbox-page-edges-");

const requests = `${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`;
const answers = `${STORE_NAME}/inbox/${STEP_QUEUE}/answers/`;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** `inner`, counting the request names each listing of the requests folder handed out, and failing the listings numbered in `failing`. */
class PagedInbox extends ForwardingStore {
  readonly listed: number[] = [];
  readonly read: string[] = [];
  readonly failing = new Set<number>();

  override get(key: string) {
    if (key.startsWith(requests)) this.read.push(key.slice(requests.length));
    return super.get(key);
  }

  override list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const inner = super.list(prefix, opts);
    if (!prefix.startsWith(requests)) return inner;
    const i = this.listed.push(0) - 1;
    const listed = this.listed;
    const fails = this.failing.has(i);
    return (async function* () {
      if (fails) throw new StoreRequestError("list", prefix, "the service is unavailable");
      for await (const o of inner) {
        if (!o.key.endsWith(`/${KEEP_NAME}`)) listed[i]!++;
        yield o;
      }
    })();
  }
}

async function served() {
  const store = new MemoryStore();
  const paged = new PagedInbox(store);
  const clock = new MockClock();
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox: ClientInbox = serveClients(queue, runtime, { store: paged, listIntervalMs: 3_600_000, logger: { error: () => undefined } });
  closers.push(async () => {
    await inbox.stop();
    await queue.close();
  });
  await inbox.drain().catch(() => {});
  return { store, paged, clock, inbox };
}

/** Writes `n` signal requests in the order of their ids; returns the ids. */
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

describe("the client inbox's pages at their edges", () => {
  for (const [n, pages] of [
    [INBOX_LIST_PAGE, [INBOX_LIST_PAGE, 0]],
    [INBOX_LIST_PAGE + 1, [INBOX_LIST_PAGE, 1]],
  ] as const) {
    it(`applies ${n} requests once each, in order, in listings of ${pages.join(" and ")}`, async () => {
      const { store, paged, clock, inbox } = await served();
      const written = await writeSignals(store, clock, n);
      paged.listed.length = 0;
      paged.read.length = 0;
      expect(await inbox.drain()).toBe(n);
      expect(paged.read).toEqual(written);
      expect(paged.listed).toEqual(pages);
      expect(await names(store, requests)).toEqual([]);
      expect(await names(store, answers)).toEqual(written);
      // A pass over the empty inbox applies nothing again.
      expect(await inbox.drain()).toBe(0);
    }, 120_000);
  }

  for (const n of [INBOX_LIST_PAGE + 1, 2 * INBOX_LIST_PAGE]) {
    it(`with ${n} requests and the listing after the first page failing: the pass rejects, and the next applies the rest once`, async () => {
      const { store, paged, clock, inbox } = await served();
      const written = await writeSignals(store, clock, n);
      paged.listed.length = 0;
      paged.read.length = 0;
      paged.failing.add(1);
      const err = await inbox.drain().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect(await names(store, answers)).toEqual(written.slice(0, INBOX_LIST_PAGE));
      expect(await names(store, requests)).toEqual(written.slice(INBOX_LIST_PAGE));
      expect(await inbox.drain()).toBe(n - INBOX_LIST_PAGE);
      // Each request read once: none of the first page again, every one of the rest.
      expect(paged.read).toEqual(written);
      expect(await names(store, requests)).toEqual([]);
      const answered = await names(store, answers);
      expect(answered).toEqual(written);
      for (const id of answered) expect(decodeAnswer((await store.get(`${answers}${id}`))!.body), id).toMatchObject({ ok: true, value: "buffered" });
    }, 120_000);
  }

  // A child owner over a directory store and then an owner in this process: tens of seconds at load 40.
  it(
    "an owner SIGKILLed near the end of its first page of one page and one more triggers leaves its successor each to apply once",
    { timeout: loadLimitTimeout(120_000) },
    () =>
      withinLoadLimit(120_000, async () => {
        const dir = await tempDir();
        const store = new LocalStore(dir);
        const schedules = ["s0", "s1", "s2", "s3"];
        const setup = await openOwner(store, { flushIntervalMs: 0 });
        // Once a year: no tick falls in the test.
        for (const id of schedules) await setup.runtime.schedules.upsert({ id, cron: "0 0 1 1 *", run: { input: new TextEncoder().encode("{}") } });
        await setup.stop();
        const n = INBOX_LIST_PAGE + 1;
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
        // Killed near its first page's end (where exactly depends on the load): the last of it answered or not, the next page listed or not.
        await until(
          "the first owner answered nine tenths of its first page",
          async () => (await names(store, answers)).length >= INBOX_LIST_PAGE - 100,
          100_000,
        );
        expect((await child.kill()).signal).toBe("SIGKILL");

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
        // One run per request: a request applied twice would have started a second.
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
