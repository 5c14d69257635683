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
import { requestKey } from "../../runtime/client/inbox-layout.js";
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
  const state = { held: false, listed: 0 };
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
      yield* snapshot;
    },
  };
  return { store, state, release: () => release?.() };
}

describe("an inbox drain while a pass runs", () => {
  it("applies a request written before the call, which the running pass listed without", async () => {
    const dir = await tempDir();
    const clock = new MockClock(T0);
    const queue = await Queue.open(new LocalStore(dir), "app", { clock, flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(queue, new LocalStore(dir), { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
    const worker = runtime.spawn();
    const held = holdingListings(new LocalStore(dir));
    const inbox = serveClients(queue, runtime, { store: held.store, listIntervalMs: 60_000 });
    closers.push(async () => {
      held.state.held = false;
      held.release();
      await inbox.stop();
      await worker.shutdown();
      await queue.close();
    });
    await runtime.schedules.upsert({ id: "hourly", cron: "0 * * * *", run: { input: new Uint8Array([7]) } });
    // Let the serving loop's first pass end, then start one whose listing (empty) is held.
    await inbox.drain();
    held.state.held = true;
    const listedBefore = held.state.listed;
    const running = inbox.drain();
    await until("the held pass has listed the inbox", () => held.state.listed > listedBefore);
    await new LocalStore(dir).put(
      `app/${requestKey("workflow-steps", monotonicFactory()(T0))}`,
      encodeRequest({ op: "schedule", action: "trigger", scheduleId: "hourly" }),
    );
    const mine = inbox.drain();
    held.state.held = false;
    held.release();
    expect(await running).toBe(0);
    expect(await mine).toBe(1);
    expect(inbox.stats.applied).toBe(1);
  });
});
