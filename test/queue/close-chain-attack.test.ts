/**
 * @module Queue.close() called twice at random moments while workers run
 * chains of ackClaimingNext (each ack enqueues the chain's next job and
 * takes it claimed in the same commit, the settlements waiting on their
 * commit's own promise) beside plain claims and acks, over a LocalStore
 * and s3rver. Every call settles with its result or ClosedError, close()
 * resolves once the queue is closed, and after a reopen every chain link
 * whose ack resolved is done with its next link there, and none is left
 * claimed.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Queue, SettlementEffects, type ClaimedJob } from "taquba";
import { localStoreCase, s3Case } from "./close-attack-cases.js";
import { turns } from "../support/turns.js";
import { testRandom } from "../support/seed.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { enc } from "./helpers.js";

const tempDir = useTempDirs("close-chain-");
const server = useS3Server();

const cases = [
  localStoreCase(tempDir, { flushIntervalMs: 1, payloadOffloadBytes: 64 }, 3),
  s3Case("s3rver, records paged", server, "chain", { flushIntervalMs: 1, recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 2 } }, 1),
];

describe("Queue.close() among ackClaimingNext chains", () => {
  it.each(cases)(
    "two close() calls at random moments, over %s: all settle, only ClosedError, every resolved link durable",
    { timeout: 60_000 },
    async (_, fresh, opts, rounds) => {
      const r = testRandom("close among chains");
      let resolvedLinks = 0;
      for (let round = 0; round < rounds; round++) {
        const storeOf = await fresh();
        let announced = false;
        const queue = await Queue.open(storeOf(), "q", {
          ...opts,
          onClosed: () => {
            announced = true;
          },
        });
        for (let k = 0; k < 4; k++) await queue.enqueue("chain", enc(`c${k}-0`));
        for (let k = 0; k < 10; k++) await queue.enqueue("plain", enc(`p${k}`));
        /** Each resolved link: the acked job and the next link its commit enqueued. */
        const links: { acked: string; next: string }[] = [];
        const acked = new Set<string>();
        const failures: unknown[] = [];
        const note = (err: unknown) => {
          if (!(err instanceof ClosedError)) failures.push(err);
        };
        const chains = Array.from({ length: 4 }, async () => {
          let job: ClaimedJob | null | undefined;
          while (!queue.closed) {
            try {
              job ??= await queue.claim("chain", 60_000);
              if (job === null) {
                await turns(2);
                continue;
              }
              const payload = enc(`${job.id}+1 ${r.int(3) === 0 ? "z".repeat(100) : ""}`);
              const taken = r.int(4) !== 0;
              const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("chain", payload), { index: 0, reserve: () => taken });
              links.push({ acked: job.id, next: res.enqueued[0]!.jobId });
              job = res.next;
            } catch (err) {
              note(err);
              job = undefined;
            }
          }
        });
        const plain = Array.from({ length: 2 }, async () => {
          while (!queue.closed) {
            try {
              await queue.enqueue("plain", enc("more"));
              const batch = await queue.claimBatch("plain", 1 + r.int(3), 60_000);
              for (const j of batch) {
                await queue.ack(j);
                acked.add(j.id);
              }
            } catch (err) {
              note(err);
            }
          }
        });
        const closes: Promise<string>[] = [];
        // The first close once the chains have moved (a store round trip is many turns).
        const moved = 1 + r.int(8);
        await until(`${moved} links`, () => links.length >= moved, 20_000);
        for (let c = 0; c < 2; c++) {
          await turns(r.int(60));
          closes.push(queue.close().then(() => (announced ? "closed" : "resolved before the queue closed")));
        }
        expect(await Promise.all(closes)).toEqual(["closed", "closed"]);
        await Promise.all([...chains, ...plain]);
        expect(failures).toEqual([]);
        resolvedLinks += links.length;

        const again = await Queue.open(storeOf(), "q", opts);
        try {
          const view = again.view();
          const ackedLinks = new Set(links.map((l) => l.acked));
          for (const { acked: a, next } of links) {
            const done = await view.job(a);
            expect(done === null || done.state === "done", `link ${a} acked`).toBe(true);
            // The next link: acked itself (its done record may be swept), or there: pending again when it was claimed at the close.
            const state = (await view.job(next))?.state ?? "gone";
            expect(ackedLinks.has(next) ? state !== "claimed" : state === "pending", `link ${next} enqueued by ${a}: ${state}`).toBe(true);
          }
          for (const id of acked) {
            const info = await view.job(id);
            expect(info === null || info.state === "done", `${id} acked`).toBe(true);
          }
          expect((await view.stats("chain")).claimed).toBe(0);
          expect((await view.stats("plain")).claimed).toBe(0);
          // Every chain is still there to go on: 4 heads' worth of pending or claimable links.
          expect((await view.stats("chain")).pending).toBe(4);
        } finally {
          await again.close();
        }
      }
      // The closes came among chains that moved, not before any link.
      expect(resolvedLinks).toBeGreaterThan(0);
    },
  );
});
