/**
 * @module A job stores the payload its enqueue call saw. A caller that
 * changes, grows, shrinks or detaches the payload's buffer right after the
 * call (before the job is stored) changes nothing stored: not past the size
 * limit or around offloading, not a success that later dead-letters, not an
 * untyped error. A payload whose bytes are gone at the call is refused with
 * a `ValidationError` naming the job. Each case over MemoryStore and over
 * LocalStore, reopened to read what is durable.
 */
import { describe, expect, it } from "vitest";
import {
  type DeadLetteredEvent,
  LocalStore,
  MemoryStore,
  MockClock,
  type ObjectStore,
  type OpenOptions,
  PayloadTooLargeError,
  Queue,
  SettlementEffects,
  ValidationError,
} from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-payload-at-call-");
const T0 = 1_700_000_000_000;

interface Backend {
  name: string;
  /** A fresh store, and a way to open the same store again (after the queue closed). */
  make(): Promise<{ store: ObjectStore; again(): ObjectStore }>;
}

const backends: Backend[] = [
  {
    name: "MemoryStore",
    async make() {
      const store = new MemoryStore();
      return { store, again: () => store };
    },
  },
  {
    name: "LocalStore",
    async make() {
      const dir = await tempDir();
      return { store: new LocalStore(dir), again: () => new LocalStore(dir) };
    },
  },
];

const filled = (n: number, fill: number) => new Uint8Array(n).fill(fill);

/** A resizable ArrayBuffer or growable SharedArrayBuffer (ES2024, past this project's type library). */
interface Resizable extends ArrayBuffer {
  resize(n: number): void;
}
interface Growable extends SharedArrayBuffer {
  grow(n: number): void;
}
const ResizableBuffer = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Resizable;
const GrowableBuffer = SharedArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Growable;

/** A length-tracking view of a resizable buffer holding `n` bytes of `fill`. */
function resizable(n: number, fill: number): { view: Uint8Array; buffer: Resizable } {
  const buffer = new ResizableBuffer(n, { maxByteLength: 1 << 20 });
  const view = new Uint8Array(buffer).fill(fill);
  return { view, buffer };
}

/** Detaches `bytes`' buffer, as a transfer to another thread does. */
function detach(bytes: Uint8Array): void {
  structuredClone(bytes.buffer, { transfer: [bytes.buffer as ArrayBuffer] });
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe.each(backends)("a job stores the payload its call saw ($name)", (backend) => {
  const options = (extra: OpenOptions): OpenOptions => ({ clock: new MockClock(T0), flushIntervalMs: 0, ...extra });

  /**
   * Runs `act` on a fresh queue, then checks after a reopen that queue "q"
   * holds exactly the jobs `expected` (their payloads, in order), each
   * delivered whole, and that none was dead-lettered.
   */
  async function storedAfter(extra: OpenOptions, act: (queue: Queue) => Promise<void>, expected: Uint8Array[]): Promise<void> {
    const { store, again } = await backend.make();
    const dead: DeadLetteredEvent[] = [];
    const queue = await Queue.open(store, "app", options({ ...extra, onDeadLettered: (e) => dead.push(e) }));
    await act(queue);
    await queue.close();
    const reopened = await Queue.open(again(), "app", options({ ...extra, onDeadLettered: (e) => dead.push(e) }));
    const got: Uint8Array[] = [];
    for (let job = await reopened.claim("q"); job !== null; job = await reopened.claim("q")) {
      const view = await reopened.view().job(job.id);
      expect(view?.payloadSize).toBe(job.payload.byteLength);
      got.push(new Uint8Array(job.payload));
      await reopened.ack(job);
    }
    await reopened.close();
    expect(dead).toEqual([]);
    expect(got).toEqual(expected);
  }

  it("a resizable buffer grown after the call: the bytes seen, within the size limit and inline", async () => {
    await storedAfter(
      { maxPayloadBytes: 1024, payloadOffloadBytes: 256 },
      async (queue) => {
        const { view, buffer } = resizable(16, 7);
        const p = queue.enqueue("q", view);
        buffer.resize(512 * 1024);
        view.fill(9);
        const { jobId } = await p;
        expect(await queue.view().job(jobId)).toMatchObject({ payloadSize: 16, payloadOffloaded: false });
      },
      [filled(16, 7)],
    );
  });

  it("an offloaded payload shrunk after the call: the bytes seen, delivered, never dead-lettered", async () => {
    await storedAfter(
      { payloadOffloadBytes: 64 },
      async (queue) => {
        const { view, buffer } = resizable(200, 3);
        const p = queue.enqueue("q", view);
        buffer.resize(10);
        const { jobId } = await p;
        expect(await queue.view().job(jobId)).toMatchObject({ payloadSize: 200, payloadOffloaded: true });
      },
      [filled(200, 3)],
    );
  });

  it("a plain buffer detached after the call, inline and offloaded: the bytes seen", async () => {
    await storedAfter(
      { payloadOffloadBytes: 64 },
      async (queue) => {
        const small = filled(8, 1);
        const big = filled(100, 2);
        const a = queue.enqueue("q", small);
        const b = queue.enqueue("q", big);
        detach(small);
        detach(big);
        await Promise.all([a, b]);
      },
      [filled(8, 1), filled(100, 2)],
    );
  });

  it("bytes changed in place after the call, inline and offloaded: the bytes seen", async () => {
    await storedAfter(
      { payloadOffloadBytes: 64 },
      async (queue) => {
        const small = filled(8, 1);
        const big = filled(100, 2);
        const a = queue.enqueue("q", small);
        const b = queue.enqueue("q", big);
        small.fill(5);
        big.fill(6);
        await Promise.all([a, b]);
      },
      [filled(8, 1), filled(100, 2)],
    );
  });

  it("a batch with an offloaded payload: each item's bytes as seen, though the write is awaited first", async () => {
    await storedAfter(
      { payloadOffloadBytes: 64 },
      async (queue) => {
        const small = filled(8, 1);
        const big = filled(100, 2);
        const p = queue.enqueueBatch([
          { queueName: "q", payload: small },
          { queueName: "q", payload: big },
        ]);
        small.fill(5);
        detach(big);
        await p;
      },
      [filled(8, 1), filled(100, 2)],
    );
  });

  it("an enqueue with effects offloading a staged payload: its own inline payload as seen", async () => {
    await storedAfter(
      { payloadOffloadBytes: 64 },
      async (queue) => {
        const small = filled(8, 1);
        const staged = filled(100, 2);
        const effects = new SettlementEffects().enqueue("q", staged);
        staged.fill(4);
        const p = queue.enqueueWithEffects("q", small, {}, effects);
        small.fill(5);
        await p;
      },
      [filled(8, 1), filled(100, 2)],
    );
  });

  it("a settlement's staged enqueue changed before the settlement: the bytes staged", async () => {
    await storedAfter(
      {},
      async (queue) => {
        await queue.enqueue("first", filled(1, 0));
        const next = filled(8, 1);
        const effects = new SettlementEffects().enqueue("q", next);
        next.fill(5);
        await queue.ack((await queue.claim("first"))!, effects);
      },
      [filled(8, 1)],
    );
  });

  it("a growable shared buffer grown after the call: the bytes seen, within the limit", async () => {
    await storedAfter(
      { maxPayloadBytes: 64 },
      async (queue) => {
        const shared = new GrowableBuffer(16, { maxByteLength: 4096 });
        const view = new Uint8Array(shared).fill(7);
        const p = queue.enqueue("q", view);
        shared.grow(4096);
        view.fill(9);
        await p;
      },
      [filled(16, 7)],
    );
  });

  it("refuses a view whose bytes are gone at the call, naming the job, and stores nothing", async () => {
    const { store } = await backend.make();
    const queue = await Queue.open(store, "app", options({}));
    const gone = filled(8, 1);
    detach(gone);
    const { view: out, buffer } = resizable(64, 1);
    const outOfBounds = new Uint8Array(buffer, 32, 16);
    buffer.resize(8);
    void out;
    for (const [payload, opts, job] of [
      [gone, { jobId: "order-1" }, 'job "order-1" enqueued to queue "q"'],
      [outOfBounds, {}, 'the job enqueued to queue "q"'],
    ] as const) {
      const err = await rejection(queue.enqueue("q", payload, opts));
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toBe(
        `the payload of ${job} is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; pass a view of live bytes`,
      );
    }
    const batch = await rejection(
      queue.enqueueBatch([
        { queueName: "q", payload: filled(1, 0) },
        { queueName: "q", payload: gone },
      ]),
    );
    expect(batch).toBeInstanceOf(ValidationError);
    expect((batch as Error).message).toMatch(/^enqueueBatch item 1: the payload of the job enqueued to queue "q" is a view of a detached/);
    expect(() => new SettlementEffects().enqueue("q", gone)).toThrow(ValidationError);
    expect((await queue.view().stats("q")).pending).toBe(0);
    await queue.close();
  });

  it("measures a payload by its bytes, not by what a subclass reports", async () => {
    class Understated extends Uint8Array {
      override get byteLength(): number {
        return 1;
      }
    }
    const { store } = await backend.make();
    const queue = await Queue.open(store, "app", options({ maxPayloadBytes: 1024 }));
    const err = await rejection(queue.enqueue("q", new Understated(2048)));
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as PayloadTooLargeError).size).toBe(2048);
    expect((await queue.view().stats("q")).pending).toBe(0);
    await queue.close();
  });
});
