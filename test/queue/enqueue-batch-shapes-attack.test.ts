/**
 * @module `enqueueBatch` given lists of odd shapes: sparse arrays (a hole
 * at the start, the middle, the end, an array made by length), array-likes,
 * arrays carrying extra fields, elements behind getters that throw, answer
 * differently on each read, or grow the array while it is read, and Proxies
 * over arrays. Each batch enqueues exactly the items given when it was called,
 * or is refused whole with a `ValidationError` naming the item, with
 * nothing written; the same after a reopen.
 */
import { describe, expect, it } from "vitest";
import { type EnqueueItem, MemoryStore, Queue, ValidationError } from "taquba";
import { refusal } from "../support/refusal.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const item = (s: string): EnqueueItem => ({ queueName: "jobs", payload: enc(s) });

/** Payloads of every job claimable from "jobs", in claim order, each acked. */
async function drain(queue: Queue): Promise<string[]> {
  const out: string[] = [];
  for (let job = await queue.claim("jobs"); job !== null; job = await queue.claim("jobs")) {
    out.push(dec(job.payload));
    await queue.ack(job);
  }
  return out;
}

/** Runs `act` on a fresh queue, then reopens its store and returns what each side drains. */
async function beforeAndAfterReopen(act: (q: Queue) => Promise<void>): Promise<{ live: string[]; reopened: string[] }> {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "app", { flushIntervalMs: 0 });
  await act(queue);
  await queue.flush();
  await queue.close();
  const again = await Queue.open(store, "app", { flushIntervalMs: 0 });
  const reopened = await drain(again);
  await again.close();
  const live = await (async () => {
    const q = await Queue.open(new MemoryStore(), "app", { flushIntervalMs: 0 });
    await act(q);
    const d = await drain(q);
    await q.close();
    return d;
  })();
  return { live, reopened };
}

/** Runs `call` with `value` planted at indexes 0-2 of Array.prototype and Object.prototype, then removes it. */
function underPlantedIndexes<T>(value: unknown, call: () => T): T {
  const planted = [Array.prototype, Object.prototype] as unknown as Record<string, unknown>[];
  for (const p of planted) for (const i of ["0", "1", "2"]) Object.defineProperty(p, i, { value, configurable: true, writable: true });
  try {
    return call();
  } finally {
    for (const p of planted) for (const i of ["0", "1", "2"]) delete p[i];
    // The definitions grew Array.prototype's length, which the deletes leave.
    Array.prototype.length = 0;
  }
}

/**
 * Expects `items` refused whole with a ValidationError matching `says`,
 * nothing enqueued; with `plant`, the call runs with it at the first indexes
 * of the prototypes (the refusal comes in the call's own turn).
 */
async function refusedWhole(items: unknown, says: RegExp, plant?: EnqueueItem): Promise<void> {
  const queue = await Queue.open(new MemoryStore(), "app", { flushIntervalMs: 0 });
  try {
    const call = () => queue.enqueueBatch(items as EnqueueItem[]);
    const err = await refusal(plant === undefined ? call : () => underPlantedIndexes(plant, call));
    expect(err).toBeInstanceOf(ValidationError);
    expect([err.message, ...err.issues].join("\n")).toMatch(says);
    expect((await queue.view().stats("jobs")).pending).toBe(0);
    expect(await drain(queue)).toEqual([]);
  } finally {
    await queue.close();
  }
}

function sparse(length: number, given: Record<number, EnqueueItem>): EnqueueItem[] {
  const a = new Array<EnqueueItem>(length);
  for (const [i, v] of Object.entries(given)) a[Number(i)] = v;
  return a;
}

describe("enqueueBatch given lists of odd shapes", () => {
  for (const polluted of [false, true]) {
    const under = polluted ? " (an item on Object.prototype and Array.prototype at every index)" : "";
    it(`sparse arrays are refused whole, naming the first hole${under}`, async () => {
      const cases: [EnqueueItem[], number][] = [
        [sparse(3, { 1: item("b"), 2: item("c") }), 0],
        [sparse(3, { 0: item("a"), 2: item("c") }), 1],
        [sparse(3, { 0: item("a"), 1: item("b") }), 2],
        [new Array<EnqueueItem>(2), 0],
      ];
      // A deleted element leaves a hole too.
      const deleted = [item("a"), item("b"), item("c")];
      delete deleted[1];
      cases.push([deleted, 1]);
      const plant = polluted ? item("planted") : undefined;
      for (const [items, hole] of cases) await refusedWhole(items, new RegExp(`enqueueBatch item ${hole} is missing \\(a hole in the items\\)`), plant);
    });
  }

  it("array-likes and typed arrays are refused, naming what was given", async () => {
    await refusedWhole({ length: 1, 0: item("a") }, /enqueueBatch takes an array of \{ queueName, payload, opts\? \}, got/);
    await refusedWhole(new Set([item("a")]), /enqueueBatch takes an array/);
    await refusedWhole(new Uint8Array(2), /enqueueBatch takes an array/);
    await refusedWhole("ab", /enqueueBatch takes an array/);
  });

  it("an array carrying extra fields enqueues its elements only, in order", async () => {
    const { live, reopened } = await beforeAndAfterReopen(async (q) => {
      const items = [item("a"), item("b")] as EnqueueItem[] & Record<string, unknown>;
      items.extra = item("extra");
      items["-1"] = item("minus one");
      items["1.5"] = item("one and a half");
      items["4294967295"] = item("past the largest index");
      const outcomes = await q.enqueueBatch(items);
      expect(outcomes).toHaveLength(2);
    });
    expect(live).toEqual(["a", "b"]);
    expect(reopened).toEqual(["a", "b"]);
  });

  it("elements behind getters: one that throws refuses the batch naming it; one that answers differently is taken as first read", async () => {
    const throwingAt1 = [item("a"), item("b")];
    Object.defineProperty(throwingAt1, 1, {
      get() {
        throw new Error("no item today");
      },
    });
    await refusedWhole(throwingAt1, /reading enqueueBatch item 1 threw: no item today/);

    const { live, reopened } = await beforeAndAfterReopen(async (q) => {
      let reads = 0;
      const shifting = [item("a"), item("b")];
      Object.defineProperty(shifting, 0, {
        get: () => (reads++ === 0 ? item("first read") : item("later read")),
      });
      await q.enqueueBatch(shifting);
      expect(reads).toBe(1);
    });
    expect(live).toEqual(["first read", "b"]);
    expect(reopened).toEqual(["first read", "b"]);
  });

  it("an element getter that grows or shrinks the array while it is read: the length read first holds", async () => {
    const grown = await beforeAndAfterReopen(async (q) => {
      const items = [item("a"), item("b")];
      Object.defineProperty(items, 0, {
        get() {
          items.push(item("pushed"));
          return item("a");
        },
      });
      expect(await q.enqueueBatch(items)).toHaveLength(2);
    });
    expect(grown.live).toEqual(["a", "b"]);
    expect(grown.reopened).toEqual(["a", "b"]);

    const shrinking = [item("a"), item("b"), item("c")];
    Object.defineProperty(shrinking, 0, {
      get() {
        shrinking.length = 1;
        return item("a");
      },
      configurable: true,
    });
    // Cut short while read: the slots it promised are holes now.
    await refusedWhole(shrinking, /enqueueBatch item 1 is missing/);
  });

  it("a Proxy over an array: its own elements enqueue; one claiming a length no array has, or hiding an element, is refused", async () => {
    const forwarded = await beforeAndAfterReopen(async (q) => {
      await q.enqueueBatch(new Proxy([item("a"), item("b")], {}));
    });
    expect(forwarded.reopened).toEqual(["a", "b"]);
    await refusedWhole(
      new Proxy([item("a")], {
        get: (t, k, r) => (k === "length" ? 2 ** 40 : Reflect.get(t, k, r)),
      }),
      /enqueueBatch's items claim a length of/,
    );
    await refusedWhole(
      new Proxy([item("a"), item("b")], {
        getOwnPropertyDescriptor: (t, k) => (k === "1" ? undefined : Reflect.getOwnPropertyDescriptor(t, k)),
      }),
      /enqueueBatch item 1 is missing/,
    );
    await refusedWhole(
      new Proxy([item("a")], {
        getOwnPropertyDescriptor() {
          throw new Error("descriptor trap");
        },
      }),
      /reading enqueueBatch item 0 threw: descriptor trap/,
    );
  });
});
