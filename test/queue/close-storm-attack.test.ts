/**
 * @module Queue.close() called three times at random moments while
 * enqueues (single, batches, offloaded payloads), claims and acks run, over
 * a LocalStore. Every call settles (no hang), each operation either
 * succeeds or fails with `ClosedError`, every close() resolves only once
 * the queue is closed, and after a reopen: every enqueue that resolved is
 * there (or done, when its ack resolved), no job stays claimed, and no
 * offloaded payload object is left without its job.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Queue } from "taquba";
import { localStoreCase, s3Case } from "./close-attack-cases.js";
import { turns } from "../support/turns.js";
import { testRandom } from "../support/seed.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { enc } from "./helpers.js";

const tempDir = useTempDirs("close-storm-");
const server = useS3Server();

const cases = [
  localStoreCase(tempDir, { flushIntervalMs: 1, payloadOffloadBytes: 64 }, 4),
  s3Case(
    "s3rver, records paged with no record cache",
    server,
    "storm",
    { flushIntervalMs: 1, payloadOffloadBytes: 64, recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 2, segmentBlockBytes: 256 } },
    2,
  ),
];

describe("Queue.close() storms", () => {
  it.each(cases)(
    "three close() calls at random moments among enqueues, claims and acks, over %s: all settle, only ClosedError, nothing durable lost or orphaned",
    { timeout: 60_000 },
    async (_, fresh, opts, rounds) => {
      const r = testRandom("close storm");
      for (let round = 0; round < rounds; round++) {
        const storeOf = await fresh();
        let announced = false;
        // onClosed is the close's last step: a close() that resolves before it let its caller reopen under it.
        const queue = await Queue.open(storeOf(), "q", {
          ...opts,
          onClosed: () => {
            announced = true;
          },
        });
        for (let i = 0; i < 10; i++) await queue.enqueue("jobs", enc(`seed ${i}`));
        const enqueued = new Set<string>();
        const acked = new Set<string>();
        const failures: unknown[] = [];
        const note = (err: unknown) => {
          if (!(err instanceof ClosedError)) failures.push(err);
        };
        const enqueuers = Array.from({ length: 3 }, async (_, w) => {
          for (let i = 0; !queue.closed; i++) {
            const big = r.int(3) === 0;
            const payload = enc(`${w}-${i} ${big ? "y".repeat(200) : ""}`);
            try {
              if (r.int(2) === 0) enqueued.add((await queue.enqueue("jobs", payload)).jobId);
              else
                for (const o of await queue.enqueueBatch([
                  { queueName: "jobs", payload },
                  { queueName: "jobs", payload: enc(`${w}-${i}b`) },
                ]))
                  enqueued.add(o.jobId);
            } catch (err) {
              note(err);
            }
          }
        });
        const workers = Array.from({ length: 2 }, async () => {
          while (!queue.closed) {
            try {
              const batch = await queue.claimBatch("jobs", 1 + r.int(4), 60_000);
              if (batch.length === 0) await turns(2);
              for (const job of batch) {
                await queue.ack(job);
                acked.add(job.id);
              }
            } catch (err) {
              note(err);
            }
          }
        });
        const closes: Promise<string>[] = [];
        for (let c = 0; c < 3; c++) {
          await turns(r.int(40));
          closes.push(queue.close().then(() => (announced ? "closed" : "resolved before the queue closed")));
        }
        expect(await Promise.all(closes)).toEqual(["closed", "closed", "closed"]);
        await Promise.all([...enqueuers, ...workers]);
        expect(failures).toEqual([]);

        const again = await Queue.open(storeOf(), "q", opts);
        try {
          const view = again.view();
          for (const id of enqueued) {
            const info = await view.job(id);
            if (acked.has(id)) expect(info === null || info.state === "done", `${id} acked`).toBe(true);
            else expect(info?.state, `${id} enqueued`).toMatch(/^(pending|done)$/);
          }
          // Offloaded payloads: each object belongs to a job that exists.
          const objects = await again.listPayloadObjects();
          const stats = await view.stats("jobs");
          expect(stats.claimed, "no job left claimed").toBe(0);
          let offloadedJobs = 0;
          for (const id of enqueued) if ((await view.job(id))?.payloadOffloaded === true) offloadedJobs++;
          expect(objects.length, "payload objects without a job").toBeLessThanOrEqual(offloadedJobs);
        } finally {
          await again.close();
        }
      }
    },
  );
});
