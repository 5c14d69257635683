/**
 * @module Admission limits at their edges: the largest settings accepted and
 * what a refusal says, how a key template reads a job's headers (missing,
 * empty, inherited), a rate limit with a concurrency limit on one queue, and
 * a claim under a limit (the batch size holds; the earliest freeing window wakes).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, ValidationError } from "taquba";

const openWith = (config: object, clock = new MockClock(1_000_000)) =>
  Queue.open(new MemoryStore(), "q", { clock, flushIntervalMs: 0, queueConfigs: { jobs: config } });

async function accepts(config: object): Promise<void> {
  const queue = await openWith(config);
  await queue.close();
}

/** The message of the ValidationError that opening with `config` fails with. */
async function refusal(config: object): Promise<string> {
  const err = await openWith(config).then(
    async (queue) => {
      await queue.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err, JSON.stringify(config)).toBeInstanceOf(ValidationError);
  return (err as Error).message;
}

async function enqueueWith(queue: Queue, ...headers: Array<Record<string, string> | undefined>): Promise<void> {
  for (const h of headers) await queue.enqueue("jobs", new Uint8Array([1]), h === undefined ? {} : { headers: h });
}

describe("admission limit settings", () => {
  it("accept their largest values and refuse one past them, naming the setting and the value", async () => {
    await accepts({ rateLimit: { limit: 100_000, periodMs: 31_536_000_000 } });
    await accepts({ rateLimit: { limit: 1, periodMs: 1 } });
    await accepts({ concurrency: { limit: 1_000_000, key: "x".repeat(256) } });
    expect(await refusal({ rateLimit: { limit: 1, periodMs: 31_536_000_001 } })).toMatch(/QueueConfig\.rateLimit\.periodMs .*, got 31536000001$/);
    expect(await refusal({ rateLimit: { limit: 1, periodMs: 1.5 } })).toMatch(/QueueConfig\.rateLimit\.periodMs .*, got 1\.5$/);
    expect(await refusal({ rateLimit: { limit: 100_001, periodMs: 10 } })).toMatch(/QueueConfig\.rateLimit\.limit .*, got 100001$/);
    // Its own bound, not the concurrency limit's (1000000), for every kind of bad limit.
    for (const limit of [0, 1.5]) {
      expect(await refusal({ rateLimit: { limit, periodMs: 10 } })).toMatch(
        new RegExp(`QueueConfig\\.rateLimit\\.limit must be an integer from 1 to 100000, got ${limit}$`),
      );
    }
    expect(await refusal({ rateLimit: null })).toMatch(/QueueConfig\.rateLimit must be an object/);
    expect(await refusal({ rateLimit: "10/s" })).toMatch(/QueueConfig\.rateLimit must be an object/);
    expect(await refusal({ rateLimit: { limit: 1, periodMs: 10, key: "" } })).toMatch(/QueueConfig\.rateLimit\.key must be a template/);
    expect(await refusal({ concurrency: { limit: 1_000_001 } })).toMatch(/QueueConfig\.concurrency\.limit .*, got 1000001$/);
    expect(await refusal({ concurrency: null })).toMatch(/QueueConfig\.concurrency must be an object/);
    expect(await refusal({ concurrency: 5 })).toMatch(/QueueConfig\.concurrency must be an object/);
    expect(await refusal({ concurrency: { limit: 1, key: "x".repeat(257) } })).toMatch(/QueueConfig\.concurrency\.key must be a template/);
    expect(await refusal({ concurrency: { limit: 1, key: 7 } })).toMatch(/QueueConfig\.concurrency\.key must be a template .*, got 7$/);
  });

  it("refuse a key template with a brace that opens or closes no header name", async () => {
    await accepts({ concurrency: { limit: 1, key: "t-{tenant}/{region.name}" } });
    for (const key of ["{tenant", "tenant}", "{tenant}}", "{{tenant}", "{}", "{ten ant}"]) {
      expect(await refusal({ concurrency: { limit: 1, key } }), key).toMatch(/has an unbalanced brace; name headers as \{header_name\}/);
    }
  });
});

describe("admission keys", () => {
  it("a missing header reads as empty: jobs without it share the key of an empty value", async () => {
    const queue = await openWith({ concurrency: { limit: 1, key: "{tenant}" } });
    await enqueueWith(queue, undefined, { tenant: "" }, { other: "x" }, { tenant: "a" });
    const first = await queue.claimBatch("jobs", 10);
    expect(first.map((j) => j.headers["tenant"] ?? "(none)")).toEqual(["(none)", "a"]);
    await queue.ack(first[0]!);
    expect((await queue.claimBatch("jobs", 10)).map((j) => j.headers["tenant"])).toEqual([""]);
    await queue.close();
  });

  it("reads only the job's own headers, never a property every object has", async () => {
    // With "{toString}" every job below has no such header: one key for all.
    const queue = await openWith({ concurrency: { limit: 1, key: "{toString}" } });
    await enqueueWith(queue, undefined, { other: "x" }, { toString: "mine" });
    const first = await queue.claimBatch("jobs", 10);
    const own = (h: Record<string, string>, name: string) => (Object.hasOwn(h, name) ? h[name] : undefined);
    expect(first.map((j) => own(j.headers, "toString") ?? own(j.headers, "other") ?? "(none)")).toEqual(["(none)", "mine"]);
    await queue.close();
  });

  it("builds the key from every header the template names", async () => {
    const queue = await openWith({ concurrency: { limit: 1, key: "{tenant}/{region}" } });
    await enqueueWith(queue, { tenant: "a", region: "eu" }, { tenant: "a", region: "us" }, { tenant: "a" }, { tenant: "a", region: "" }, { tenant: "b" });
    const first = await queue.claimBatch("jobs", 10);
    expect(first.map((j) => `${j.headers["tenant"]}/${j.headers["region"] ?? "-"}`)).toEqual(["a/eu", "a/us", "a/-", "b/-"]);
    await queue.close();
  });
});

describe("a rate limit and a concurrency limit on one queue", () => {
  it("a claim refused for concurrency does not use up the rate window", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await openWith({ rateLimit: { limit: 2, periodMs: 1000 }, concurrency: { limit: 1 } }, clock);
    await enqueueWith(queue, undefined, undefined, undefined);
    const a = await queue.claimBatch("jobs", 10);
    expect(a).toHaveLength(1);
    // Full for concurrency, twice: neither try may count as a claim of the window.
    expect(await queue.claimBatch("jobs", 10)).toEqual([]);
    expect(await queue.claimBatch("jobs", 10)).toEqual([]);
    await queue.ack(a[0]!);
    const b = await queue.claimBatch("jobs", 10);
    expect(b).toHaveLength(1);
    await queue.ack(b[0]!);
    // Two claims in this window: the third waits for it to end, and not longer.
    expect(await queue.claimBatch("jobs", 10)).toEqual([]);
    clock.advance(999);
    expect(await queue.claimBatch("jobs", 10)).toEqual([]);
    clock.advance(1);
    expect(await queue.claimBatch("jobs", 10)).toHaveLength(1);
    await queue.close();
  });
});

describe("a claim under a limit", () => {
  it("claims at most the batch size, though the scan looks further for jobs a limit holds back", async () => {
    const queue = await openWith({ concurrency: { limit: 100 } });
    await enqueueWith(queue, undefined, undefined, undefined, undefined, undefined);
    expect(await queue.claimBatch("jobs", 2)).toHaveLength(2);
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 3, claimed: 2 });
    await queue.close();
  });

  it("wakes its workers when the first held-back job may be claimed, not a later one", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await openWith({ rateLimit: { limit: 1, periodMs: 1000, key: "{tenant}" }, leaseMs: 60_000 }, clock);
    await enqueueWith(queue, { tenant: "a" });
    expect(await queue.claimBatch("jobs", 1)).toHaveLength(1);
    clock.advance(500);
    await enqueueWith(queue, { tenant: "b" });
    expect(await queue.claimBatch("jobs", 1)).toHaveLength(1);
    // Both tenants' windows are full: a's frees at 1_001_000, b's at 1_001_500.
    await enqueueWith(queue, { tenant: "a" }, { tenant: "b" });
    expect(await queue.claimBatch("jobs", 2)).toEqual([]);
    expect(clock.nextDeadline).toBe(1_001_000);
    await queue.close();
  });
});
