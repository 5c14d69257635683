/**
 * @module The client inbox over a store whose listings break the store
 * contract (keys out of order or listed twice): requests are applied in the
 * order listed and the answer sweep stops at the first answer too young, so
 * a pass over such a listing fails with StoreRequestError naming the store
 * given to serveClients, and leaves requests and answers where they were,
 * instead of applying a request twice or keeping old answers for ever. Over
 * a store that ignores the prefix, only the inbox's own requests are read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, serveClients, StoreRequestError, WorkflowRuntime, type ClientInbox } from "taquba";
import { encodeRequest } from "../../runtime/client/request-codec.js";
import { KEEP_NAME, requestIds } from "../../runtime/client/inbox-layout.js";
import { DisorderedListings, type Disorder } from "../support/disordered-listings.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";
import { listingEverything } from "../support/careless-listings.js";

const requests = `${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`;
const answers = `${STORE_NAME}/inbox/${STEP_QUEUE}/answers/`;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A queue over a MemoryStore, and its inbox served through `disorder` over the same store. */
async function served(disorder: Disorder | "ignoring the prefix") {
  const store = new MemoryStore();
  const failures: unknown[] = [];
  const clock = new MockClock();
  const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
  const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
  const inbox: ClientInbox = serveClients(queue, runtime, {
    store: disorder === "ignoring the prefix" ? listingEverything(store) : new DisorderedListings(store, disorder),
    appliedRetentionMs: 60_000,
    listIntervalMs: 3_600_000,
    // The serving loop's passes log what failed; a test's own drain may follow one and find nothing left to do.
    logger: { error: (fields: unknown) => failures.push((fields as { err?: unknown }).err) },
  });
  closers.push(async () => {
    await inbox.stop();
    await queue.close();
  });
  // Let the serving loop's first pass (and its sweep) end before the test writes.
  await inbox.drain().catch(() => {});
  failures.length = 0;
  /** The failures of every pass so far, a drain's own included. */
  const drained = async () => {
    await inbox.drain().catch((e: unknown) => failures.push(e));
    return failures.splice(0);
  };
  return { store, clock, inbox, drained };
}

/** The names under `folder`, in key order, placeholders left out. */
async function names(store: MemoryStore, folder: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(folder)) if (!o.key.endsWith(`/${KEEP_NAME}`)) out.push(o.key.slice(folder.length));
  return out;
}

describe("the client inbox over a store that breaks the listing contract", () => {
  it("refuses a listing that answers each request twice and applies none of them", async () => {
    const { store, clock, inbox, drained } = await served("each key twice");
    const ids = requestIds();
    const written = [ids(clock.now()), ids(clock.now())];
    for (const id of written) await store.put(`${requests}${id}`, encodeRequest({ op: "signal", key: "k", payload: new Uint8Array([1]) }));
    const failed = await drained();
    expect(failed.length).toBeGreaterThan(0);
    for (const err of failed) {
      expect(err).toBeInstanceOf(StoreRequestError);
      expect((err as Error).message).toMatch(/the store given to serveClients listed .* out of key order or a second time/);
    }
    expect(await names(store, requests)).toEqual(written);
    expect(inbox.stats.applied).toBe(0);
  });

  it("refuses an answer listing out of order instead of stopping its sweep at a young answer for ever", async () => {
    const { store, clock, drained } = await served("reversed");
    const ids = requestIds();
    const old = [ids(clock.now()), ids(clock.now())];
    for (const id of old) await store.put(`${answers}${id}`, new Uint8Array([1]));
    clock.advance(61_000);
    const young = ids(clock.now());
    await store.put(`${answers}${young}`, new Uint8Array([1]));
    clock.advance(7_000);
    const failed = await drained();
    expect(failed.length).toBeGreaterThan(0);
    for (const err of failed) expect((err as Error).message).toMatch(/the store given to serveClients listed .*answers.* out of key order/);
    expect(await names(store, answers)).toEqual([...old, young]);
  });

  it("applies only its own step queue's requests over a store that ignores the prefix", async () => {
    const { store, clock, inbox, drained } = await served("ignoring the prefix");
    const ids = requestIds();
    const theirs = `${STORE_NAME}/inbox/other-steps/requests/`;
    const [other, mine] = [ids(clock.now()), ids(clock.now())];
    const request = encodeRequest({ op: "signal", key: "k", payload: new Uint8Array([1]) });
    await store.put(`${theirs}${other}`, request);
    await store.put(`${requests}${mine}`, request);
    expect(await drained()).toEqual([]);
    expect(inbox.stats.applied).toBe(1);
    expect(await names(store, requests)).toEqual([]);
    expect(await names(store, theirs)).toEqual([other]);
  });
});
