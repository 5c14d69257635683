/**
 * @module `ClientInbox.drain()` called while a pass runs: the running pass
 * may have listed the inbox before the caller wrote its request, so the
 * call must get a pass that lists after it, not share the running one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { monotonicFactory } from "ulid";
import {
  LocalStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  serveClients,
  StepOutcome,
  WorkflowRuntime,
  type ListedObject,
  type ListOptions,
  type ObjectStore,
} from "../../runtime/index.js";
import { encodeRequest } from "../../runtime/client/request-codec.js";
import { KEEP_NAME, requestKey, requestsPrefix } from "../../runtime/client/inbox-layout.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const tempDir = useTempDirs("taquba-inbox-drain-");
const T0 = Date.parse("2026-03-02T10:00:30Z");
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A store whose listings, while `held` is set, take their snapshot at once and hand it over only when released. */
function holdingListings(inner: ObjectStore) {
  let release: (() => void) | undefined;
  const state = { held: false, listed: 0, failNext: 0 };
  const store: ObjectStore = {
    get: (k) => inner.get(k),
    getRange: inner.getRange ? (k, o, l) => inner.getRange!(k, o, l) : undefined,
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k) => inner.delete(k),
    async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
      const snapshot: ListedObject[] = [];
      for await (const o of inner.list(prefix, opts)) snapshot.push(o);
      state.listed++;
      if (state.held) await new Promise<void>((r) => (release = r));
      if (state.failNext > 0 && prefix.includes("/requests/")) {
        state.failNext--;
        throw Object.assign(new Error("listing failed: connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      }
      yield* snapshot;
    },
  };
  return { store, state, release: () => release?.() };
}

describe("an inbox drain while a pass runs", () => {
  it("applies a request written before the call, which the running pass listed without", async () => {
    const s = await served(await tempDir());
    // A pass whose listing (empty) is held, then a request written and a call made while it runs.
    const { pass: running } = await s.holdNextPass();
    await s.write();
    const mine = s.inbox.drain();
    s.letGo();
    expect(await running).toBe(0);
    expect(await mine).toBe(1);
    expect(s.inbox.stats.applied).toBe(1);
  });
});

/** A queue over `dir` with a runtime, a worker and an inbox served through a store whose listings can be held. */
async function served(dir: string) {
  const clock = new MockClock(T0);
  const queue = await Queue.open(new LocalStore(dir), "app", { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, new LocalStore(dir), { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
  const worker = runtime.spawn();
  const held = holdingListings(new LocalStore(dir));
  const inbox = serveClients(queue, runtime, { store: held.store, listIntervalMs: 60_000 });
  let stopped = false;
  closers.push(async () => {
    held.state.held = false;
    held.release();
    if (!stopped) await inbox.stop();
    await worker.shutdown();
    await queue.close();
  });
  await runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([7]) } });
  // Let the serving loop's first pass end.
  await inbox.drain();
  const ids = monotonicFactory();
  let at = T0;
  /** Writes a trigger of the schedule to the inbox, as a client does. */
  const write = () =>
    new LocalStore(dir).put(`app/${requestKey("workflow-steps", ids(++at))}`, encodeRequest({ op: "schedule", action: "trigger", scheduleId: "hourly" }));
  /** Holds the next listing; resolves once a pass has taken its snapshot. */
  const holdNextPass = async () => {
    for (;;) {
      held.state.held = true;
      const listedBefore = held.state.listed;
      const passesBefore = inbox.stats.listings;
      const pass = inbox.drain();
      if (inbox.stats.listings > passesBefore) {
        await until("a pass has listed the inbox", () => held.state.listed > listedBefore);
        // In an object: an async function returning the promise itself would wait for it.
        return { pass };
      }
      // A pass of the serving loop was running (woken by a write it watched): this call got the pass after it,
      // not one of its own. Let both run unheld, then start one again.
      held.state.held = false;
      held.release();
      await pass;
    }
  };
  const letGo = () => {
    held.state.held = false;
    held.release();
  };
  const stop = async () => {
    stopped = true;
    await inbox.stop();
  };
  /** The inbox's requests left in the store. */
  const left = async () => {
    const names: string[] = [];
    const prefix = `app/${requestsPrefix("workflow-steps")}`;
    for await (const o of new LocalStore(dir).list(prefix)) if (o.key !== `${prefix}${KEEP_NAME}`) names.push(o.key);
    return names;
  };
  return { inbox, held, write, holdNextPass, letGo, stop, left };
}

/** `p` settled: "resolved n" or the rejection's class name; "pending" when it has not settled after a few turns. */
async function settled(p: Promise<number>): Promise<string> {
  let out = "pending";
  p.then(
    (n) => (out = `resolved ${n}`),
    (e: unknown) => (out = (e as Error).constructor.name),
  );
  for (let i = 0; i < 50 && out === "pending"; i++) await new Promise<void>((r) => setImmediate(r));
  return out;
}

describe("inbox drains attacked", () => {
  it("calls made one after another while a pass is held, each after writing a request: every call resolves and every request is applied once", async () => {
    const s = await served(await tempDir());
    const { pass: running } = await s.holdNextPass();
    const calls: Promise<number>[] = [];
    for (let i = 0; i < 5; i++) {
      await s.write();
      calls.push(s.inbox.drain());
    }
    s.letGo();
    expect(await running).toBe(0);
    const handled = await Promise.all(calls);
    // The calls made meanwhile share the next pass, which lists after every one of them.
    expect(new Set(handled)).toEqual(new Set([5]));
    expect(s.inbox.stats.applied).toBe(5);
    expect(await s.left()).toEqual([]);
  });

  it("a pass whose listing fails: its callers get the store's error, callers that came meanwhile get the next pass, which applies their requests", async () => {
    const s = await served(await tempDir());
    const { pass: running } = await s.holdNextPass();
    // Set once the held pass has listed: set before, a pass of the serving loop that holdNextPass let run
    // first could take the failure (seen once in a full run), and the held pass then listed fine.
    s.held.state.failNext = 1;
    await s.write();
    const mine = s.inbox.drain();
    s.letGo();
    await expect(running).rejects.toThrow(/listing failed/);
    expect(await mine).toBe(1);
    expect(s.inbox.stats.applied).toBe(1);
    expect(await s.left()).toEqual([]);
  });

  it("stop() while a pass is held and calls wait for the next one: stop resolves, the waiting calls and calls after stop reject with ClosedError without reading the store; no request is lost", async () => {
    const s = await served(await tempDir());
    const { pass: running } = await s.holdNextPass();
    await s.write();
    const waiting = [s.inbox.drain(), s.inbox.drain()];
    // Handled from the start: they may reject before this test reads them below.
    for (const w of waiting) w.catch(() => undefined);
    const stopping = s.stop();
    s.letGo();
    await stopping;
    expect(await running).toBe(0);
    // Their pass never ran: they say so rather than resolve as if the inbox were empty.
    for (const w of waiting) expect(await settled(w)).toBe("ClosedError");
    const listed = s.held.state.listed;
    expect(await settled(s.inbox.drain())).toBe("ClosedError");
    await expect(s.inbox.drain()).rejects.toThrow(/this client inbox is closed/);
    expect(s.held.state.listed).toBe(listed);
    // The request no pass applied is still in the inbox, for the next server.
    expect(await s.left()).toHaveLength(1);
  });
});
