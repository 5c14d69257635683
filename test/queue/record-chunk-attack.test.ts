/**
 * @module Job records written as views of shared 16 KiB chunks (see
 * record-pack.ts) attacked from the queue's side over a LocalStore with
 * records paged: enqueues of every size around the shared limit from many
 * callers at once (their commits grouped, so views of one chunk wait in one
 * WAL batch while later records are written into the chunk), chained claims
 * (whose claim keeps the bytes it wrote), settlements and wakes, with store
 * puts failing at seeded random (failed commits, some after landing). Every
 * job an acknowledged call reported must come back, after a reopen, with the
 * payload, headers and attached bytes it was given; each claimed job's bytes
 * stay as handed out while later records are written.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, Queue, SettlementEffects, withFaults, type ClaimedJob } from "taquba";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-record-chunk-");
const paged = { pageValues: { keyPrefixes: ["j/"], minBytes: 0, cacheBytes: 0 }, checkpointWalObjects: 4 };

interface Expected {
  payload: Uint8Array;
  headers: Record<string, string>;
  attached?: Uint8Array;
}

/** A payload naming its job, `size` bytes: records from a few bytes to past the 2 KiB shared limit. */
function payloadOf(tag: string, size: number): Uint8Array {
  const out = new Uint8Array(size);
  const head = new TextEncoder().encode(tag);
  out.set(head.subarray(0, size));
  for (let i = head.length; i < size; i++) out[i] = (i * 31 + tag.length) & 0xff;
  return out;
}

function sizeOf(r: TestRandom): number {
  const pick = r.int(4);
  return pick === 0 ? r.int(40) : pick === 1 ? 1900 + r.int(300) : pick === 2 ? 200 + r.int(800) : 2048 + r.int(3);
}

const same = (a: Uint8Array | undefined, b: Uint8Array) => a !== undefined && Buffer.from(a).equals(b);

async function openOver(dir: string, r: TestRandom, rate: number, clock: MockClock) {
  const store = withFaults(new LocalStore(dir), { failureRate: rate, seed: r.int(1_000_000), ops: ["put"] });
  const queue = await Queue.open(store, "q", { clock, flushIntervalMs: 1, engineOptions: paged, recordCacheBytes: 0 });
  return { store, queue };
}

describe("job records in shared chunks, attacked through the queue", () => {
  it(
    "grouped enqueues, chained claims and wakes under failing puts: every acknowledged job back whole after a reopen, held jobs unchanged",
    {
      // Hundreds of fsynced commits: a loaded machine stretches its wait on the disk many times.
      timeout: loadLimitTimeout(30_000),
    },
    () =>
      withinLoadLimit(30_000, async () => {
        const r = testRandom("record chunk attack");
        const dir = await tempDir();
        const clock = new MockClock(1_700_000_000_000);
        const expected = new Map<string, Expected>();
        const held: { job: ClaimedJob; payload: Uint8Array; headers: string }[] = [];
        let { store, queue } = await openOver(dir, r, 0.05, clock);
        const scheduled: string[] = [];
        for (let round = 0; round < 6; round++) {
          // Many callers at once: their commits go out grouped, the records of one WAL batch views of shared chunks.
          const calls = Array.from({ length: 60 }, async (_, n) => {
            const tag = `r${round}-${n}`;
            const payload = payloadOf(tag, sizeOf(r));
            const headers = { tag, pad: "h".repeat(r.int(3) === 0 ? 1500 : r.int(30)) };
            const due = r.int(5) === 0 ? { runAt: clock.now() + 60_000 } : {};
            try {
              const out = await queue.enqueue(round % 2 === 0 ? "a" : "b", payload, { headers, ...due });
              expected.set(out.jobId, { payload: payload.slice(), headers: { ...headers } });
              if (due.runAt !== undefined) scheduled.push(out.jobId);
            } catch {
              // Refused after its retries: it may still have landed (see the check after the reopen).
            }
          });
          await Promise.all(calls);
          // Wakes attach bytes to scheduled jobs: their records are written again, into the chunk others' views share.
          for (const id of scheduled.splice(0, 4)) {
            const attached = payloadOf(`w-${id}`, sizeOf(r));
            const want = expected.get(id)!;
            try {
              if ((await queue.wake(id, attached)) === "woken") want.attached = attached.slice();
              attached.fill(0);
            } catch {
              expected.delete(id);
            }
          }
          // Chained claims: each ack enqueues the next job already claimed, its claim keeping the bytes it wrote.
          for (let n = 0; n < 10; n++) {
            const job = await queue.claim(round % 2 === 0 ? "a" : "b").catch(() => null);
            if (job === null) continue;
            const tag = `c${round}-${n}`;
            const payload = payloadOf(tag, sizeOf(r));
            try {
              const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("c", payload, { headers: { tag } }), {
                index: 0,
                reserve: () => true,
              });
              expected.delete(job.id);
              if (res.next !== undefined) {
                expected.set(res.next.id, { payload: payload.slice(), headers: { tag } });
                held.push({ job: res.next, payload: payload.slice(), headers: JSON.stringify(res.next.headers) });
              }
            } catch {
              // It may have landed before its put failed: the job it settled is no longer known to be there.
              expected.delete(job.id);
            }
          }
          for (const h of held) {
            expect(same(h.job.payload, h.payload), `held job ${h.job.id}`).toBe(true);
            expect(JSON.stringify(h.job.headers)).toBe(h.headers);
          }
        }
        expect(store.injected).toBeGreaterThan(0);
        await queue.close().catch(() => undefined);
        store.failureRate = 0;
        ({ store, queue } = await openOver(dir, r, 0, clock));
        try {
          // Scheduled jobs come due; claims of the closed queue were given back by the reopen's recovery.
          clock.advance(120_000);
          const seen = new Set<string>();
          let wrong = 0;
          for (const name of ["a", "b", "c"]) {
            for (let batch = await queue.claimBatch(name, 100); batch.length > 0; batch = await queue.claimBatch(name, 100)) {
              for (const job of batch) {
                seen.add(job.id);
                const want = expected.get(job.id);
                // A job of a call that failed after its commit landed: not expected, still whole (its payload starts with its tag).
                const tag = job.headers["tag"] ?? "";
                const whole = want === undefined ? same(job.payload.subarray(0, tag.length), new TextEncoder().encode(tag)) : same(job.payload, want.payload);
                if (!whole || (want !== undefined && JSON.stringify(job.headers) !== JSON.stringify(want.headers))) wrong++;
                if (want?.attached !== undefined && !same(job.attached, want.attached)) wrong++;
                await queue.ack(job);
              }
            }
          }
          expect(wrong).toBe(0);
          expect([...expected.keys()].filter((id) => !seen.has(id))).toEqual([]);
        } finally {
          await queue.close();
        }
      }),
  );
});
