/**
 * @module Payloads over a SharedArrayBuffer that another thread grows and
 * writes the whole time enqueues read it (a worker thread, not the
 * caller's own code, so no turn boundary protects the bytes). Each job
 * stores one size, the one checked against `maxPayloadBytes` and the
 * offload threshold: an enqueue past the limit is refused with
 * `PayloadTooLargeError`, every other job is delivered whole after a
 * reopen with the size its record holds (an offloaded one never fails its
 * checksum and is never dead-lettered), and every stored byte is one the
 * writer wrote.
 */
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { type DeadLetteredEvent, LocalStore, MockClock, PayloadTooLargeError, Queue } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-payload-shared-writer-");
const T0 = 1_700_000_000_000;
const MAX_PAYLOAD = 8 * 1024;
const OFFLOAD = 1024;
const MAX_BYTES = 16 * 1024;

interface Growable extends SharedArrayBuffer {
  grow(n: number): void;
}
const GrowableBuffer = SharedArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Growable;

/**
 * A thread that, until told to stop (word 0), fills the buffer with one
 * byte value per pass (1-250, round and round) and grows it towards the
 * size the test asks for (word 1), 64 bytes at a time between passes: the
 * growth and the writes come from this thread, at any point of an enqueue.
 * It says it started once its first pass has filled the buffer; after that
 * only bytes a growth added and the next pass has not reached yet are zero
 * (a grown buffer's new bytes are), at most the last 64 of the buffer.
 */
const WRITER = `
const { workerData, parentPort } = require("node:worker_threads");
const { buffer, control } = workerData;
const words = new Int32Array(control);
for (let pass = 0; Atomics.load(words, 0) === 0; pass++) {
  new Uint8Array(buffer).fill(1 + (pass % 250));
  if (pass === 0) parentPort.postMessage("started");
  const wanted = Atomics.load(words, 1);
  if (buffer.byteLength < wanted) buffer.grow(Math.min(wanted, buffer.byteLength + 64));
}
`;

let writer: { worker: Worker; words: Int32Array } | undefined;

/** Stops the writer thread, if it runs. */
async function stopWriter(): Promise<void> {
  if (writer === undefined) return;
  Atomics.store(writer.words, 0, 1);
  await writer.worker.terminate();
  writer = undefined;
}

afterEach(stopWriter);

/** Starts the writer over `buffer`; returns how to ask it to grow the buffer to a size. */
async function startWriter(buffer: Growable): Promise<(size: number) => void> {
  const words = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(WRITER, { eval: true, workerData: { buffer, control: words.buffer } });
  writer = { worker, words };
  await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return (size) => Atomics.store(words, 1, size);
}

describe("payloads over a shared buffer another thread grows and writes", () => {
  it("each job stores one size, checked against the limit, delivered whole after a reopen; past the limit refused", async () => {
    const dir = await tempDir();
    const dead: DeadLetteredEvent[] = [];
    const options = {
      clock: new MockClock(T0),
      flushIntervalMs: 0,
      maxPayloadBytes: MAX_PAYLOAD,
      payloadOffloadBytes: OFFLOAD,
      onDeadLettered: (e: DeadLetteredEvent) => dead.push(e),
    };
    const buffer = new GrowableBuffer(256, { maxByteLength: MAX_BYTES });
    const growTo = await startWriter(buffer);
    const queue = await Queue.open(new LocalStore(dir), "app", options);
    const sizes = new Map<string, number>();
    let refused = 0;
    // Length-tracking views, whatever length the buffer has at the call, until the buffer is past the limit.
    for (let i = 0; i < 400 && refused < 5; i++) {
      // Asked before each enqueue: the writer grows the buffer while the enqueue reads it, from the limit's side of it too.
      growTo(256 + 64 * i);
      const view = new Uint8Array(buffer);
      try {
        const { jobId } = await queue.enqueue("q", view);
        const job = await queue.view().job(jobId);
        expect(job?.payloadSize).toBeLessThanOrEqual(MAX_PAYLOAD);
        expect(job?.payloadOffloaded).toBe(job!.payloadSize > OFFLOAD);
        sizes.set(jobId, job!.payloadSize);
      } catch (err) {
        expect(err).toBeInstanceOf(PayloadTooLargeError);
        refused++;
      }
    }
    // Nothing reads the buffer from here on: the writer's spinning would only take a core from the claims.
    await stopWriter();
    await queue.close();
    expect(refused).toBeGreaterThan(0);
    expect([...sizes.values()].some((n) => n > OFFLOAD)).toBe(true);

    const reopened = await Queue.open(new LocalStore(dir), "app", options);
    let delivered = 0;
    // Claimed and acked sixteen at a time (a durable commit each, one at a time, was the rest of the test's time).
    for (let jobs = await reopened.claimBatch("q", 16); jobs.length > 0; jobs = await reopened.claimBatch("q", 16)) {
      for (const job of jobs) {
        expect(job.payload.byteLength).toBe(sizes.get(job.id));
        // Every byte one the writer wrote (the copy may fall between two of its passes), but for a zero tail of at most
        // 64 bytes: a copy made after a growth and before the next pass reached the new bytes.
        const p = job.payload;
        let written = p.length;
        while (written > 0 && p[written - 1] === 0 && p.length - written < 64) written--;
        for (let i = 0; i < written; i++)
          if (p[i] === 0 || p[i]! > 250) throw new Error(`job ${job.id} holds byte ${p[i]} at ${i} of ${p.length}, which no pass wrote`);
      }
      await Promise.all(jobs.map((job) => reopened.ack(job)));
      delivered += jobs.length;
    }
    await reopened.close();
    expect(dead).toEqual([]);
    expect(delivered).toBe(sizes.size);
  });
});
