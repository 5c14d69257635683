/**
 * @module Per-key concurrency limits under random claims, settlements,
 * lease expiries and crashes: the claims held at once per key (the queue's,
 * and a flow rule's beside it, defined again by each new owner) never exceed
 * the limit, jobs of a full key wait without blocking other keys, and every
 * job is claimed in the end.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClaimLostError, FLOW_CONCURRENCY_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue, ValidationError, type ClaimedJob } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";

const LIMIT = 2;
const LEASE = 500;
const TENANTS = ["acme", "globex", "initech"];
/** A flow rule (a typed job's limit) some jobs name: at most one claim per region, beside the queue's per-tenant limit. */
const RULE_LIMIT = 1;
const REGIONS = ["eu", "us"];

type Op =
  | { kind: "enqueue"; tenant: string; region: string | undefined }
  | { kind: "claim"; max: number }
  | { kind: "ack" | "nack"; pick: number }
  | { kind: "advance"; ms: number }
  | { kind: "crash" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("enqueue" as const), tenant: fc.constantFrom(...TENANTS), region: fc.constantFrom(undefined, ...REGIONS) }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("claim" as const), max: fc.integer({ min: 1, max: 5 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("ack" as const), pick: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("nack" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.constantFrom(100, 600) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("crash" as const) }) },
);

const open = async (store: MemoryStore, clock: MockClock) => {
  const q = await Queue.open(store, "q", {
    clock,
    flushIntervalMs: 0,
    logger: { error: () => undefined, warn: () => undefined },
    queueConfigs: { jobs: { leaseMs: LEASE, maxAttempts: 100, backoff: { baseMs: 0, maxMs: 0 }, concurrency: { limit: LIMIT, key: "{tenant}" } } },
  });
  // Rules live in the owner's memory: every new owner defines them again, as a runtime's build does.
  q.defineFlowRules("jobs", { "reports.build": { concurrency: { limit: RULE_LIMIT } } });
  return q;
};

describe("concurrency limits", () => {
  it("never holds more than the limit of claims per key, across crashes, and claims every job in the end", { timeout: HEAVY_TEST_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60 }), async (ops) => {
        const store = new MemoryStore();
        const clock = new MockClock(1_000_000);
        let queue = await open(store, clock);
        let held: ClaimedJob[] = [];
        const enqueued = new Set<string>();
        const live = () => held.filter((j) => j.lease.expiresAt > clock.now());
        const check = () => {
          for (const t of TENANTS) expect(live().filter((j) => j.headers["tenant"] === t).length).toBeLessThanOrEqual(LIMIT);
          for (const r of REGIONS) {
            expect(
              live().filter((j) => j.headers[FLOW_RULE_HEADER] === "reports.build" && j.headers[FLOW_CONCURRENCY_KEY_HEADER] === r).length,
            ).toBeLessThanOrEqual(RULE_LIMIT);
          }
        };
        for (const op of ops) {
          switch (op.kind) {
            case "enqueue":
              enqueued.add(
                (
                  await queue.enqueue("jobs", new Uint8Array([1]), {
                    headers:
                      op.region === undefined
                        ? { tenant: op.tenant }
                        : { tenant: op.tenant, [FLOW_RULE_HEADER]: "reports.build", [FLOW_CONCURRENCY_KEY_HEADER]: op.region },
                  })
                ).jobId,
              );
              break;
            case "claim":
              held.push(...(await queue.claimBatch("jobs", op.max)));
              check();
              break;
            case "ack":
            case "nack": {
              const job = held.splice(op.pick % Math.max(1, held.length), 1)[0];
              if (job === undefined) break;
              try {
                if (op.kind === "ack") {
                  await queue.ack(job);
                  enqueued.delete(job.id);
                } else await queue.nack(job, "again");
              } catch (e) {
                if (!(e instanceof ClaimLostError)) throw e;
              }
              break;
            }
            case "advance":
              clock.advance(op.ms);
              queue.runMaintenance();
              break;
            case "crash":
              // A second owner opens the store: every claim of the first is void, and so is every slot it held.
              queue = await open(store, clock);
              held = [];
              break;
          }
        }
        // Drain: settle everything held, then claim and ack until no job is left; every job comes out.
        for (const j of held)
          await queue.ack(j).then(
            () => enqueued.delete(j.id),
            () => undefined,
          );
        held = [];
        for (let rounds = 0; enqueued.size > 0 && rounds < 500; rounds++) {
          const batch = await queue.claimBatch("jobs", 10);
          held = batch;
          check();
          for (const j of batch) {
            await queue.ack(j);
            enqueued.delete(j.id);
          }
        }
        expect(enqueued.size).toBe(0);
        await queue.close();
      }),
      { numRuns: 60 },
    );
  });

  it("a full key waits without blocking other keys, and a settlement frees its slot at once", async () => {
    const queue = await open(new MemoryStore(), new MockClock(1_000_000));
    for (let i = 0; i < 5; i++) await queue.enqueue("jobs", new Uint8Array([i]), { headers: { tenant: "acme" } });
    await queue.enqueue("jobs", new Uint8Array([9]), { headers: { tenant: "globex" } });
    const first = await queue.claimBatch("jobs", 10);
    expect(first.map((j) => j.headers["tenant"])).toEqual(["acme", "acme", "globex"]);
    expect(await queue.claimBatch("jobs", 10)).toEqual([]);
    await queue.ack(first[0]!);
    const next = await queue.claimBatch("jobs", 10);
    expect(next.map((j) => j.headers["tenant"])).toEqual(["acme"]);
    expect((await queue.view().stats("jobs")).pending).toBe(2);
    await queue.close();
  });

  it("refuses absurd limits and malformed key templates at open", async () => {
    for (const concurrency of [
      { limit: 0 },
      { limit: 1.5 },
      { limit: Number.NaN },
      { limit: 1e30 },
      { limit: 1, key: "" },
      { limit: 1, key: "{tenant" },
      { limit: 1, key: "x".repeat(300) },
    ]) {
      await expect(Queue.open(new MemoryStore(), "q", { queueConfigs: { jobs: { concurrency } } }), JSON.stringify(concurrency)).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
  });
});
