/**
 * @module Job records read while `Object.prototype` holds an accessor or a
 * read-only property named as one of their fields (a library or a hardened
 * realm defined one): the record decodes to its own fields, so a claim
 * neither hands the field to the accessor's setter (a nack then stored the
 * record without it: the job's headers were lost for good; so did the
 * copy a transition makes of a record) nor fails the
 * read as a corrupted object (it told the operator to remove the store's
 * data). The job a claim hands out holds its fields as its own too: its
 * constructor's assignments gave its headers to such a setter and left the
 * worker without them.
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "taquba";
import { decodeHistory, decodeJob, decodeSuperseded, encodeHistory, encodeJob, encodeSuperseded } from "../../runtime/queue/record.js";
import { enc, openQueue } from "./helpers.js";
import { whileDefined, withPolluted } from "../support/polluted-prototype.js";

const RECORD = {
  id: "01HAAAAAAAAAAAAAAAAAAAAAAA",
  queue: "q",
  state: "pending" as const,
  seq: "01HAAAAAAAAAAAAAAAAAAAAAAA",
  priority: 3,
  payload: enc("p"),
  headers: { tenant: "a" },
  attempts: 1,
  maxAttempts: 3,
  enqueuedAt: 1,
  lastError: "first try failed",
};

describe("a job record read under an accessor or a read-only field on Object.prototype", () => {
  it("decodes to its own fields, handing none to a setter, and encodes to the same bytes", async () => {
    const bytes = encodeJob(RECORD);
    const swallowed: unknown[] = [];
    const accessor = { get: () => undefined, set: (v: unknown) => swallowed.push(v) };
    await whileDefined({ headers: accessor, priority: accessor, lastError: accessor, tenant: accessor, runAt: accessor }, async () => {
      const r = decodeJob("j/x", bytes);
      expect(Object.hasOwn(r, "headers") && Object.hasOwn(r, "priority") && Object.hasOwn(r, "lastError")).toBe(true);
      expect(Object.hasOwn(r.headers!, "tenant")).toBe(true);
      expect({ ...r, payload: undefined }).toEqual({ ...RECORD, payload: undefined });
      expect(Buffer.from(encodeJob(r)).equals(Buffer.from(bytes))).toBe(true);
    });
    expect(swallowed).toEqual([]);
  });

  it("decodes under read-only fields of the same names instead of calling the record corrupted", async () => {
    const bytes = encodeJob(RECORD);
    await whileDefined({ priority: { value: 9, writable: false }, headers: { value: {}, writable: false }, runAt: { value: 5, writable: false } }, async () => {
      let r: ReturnType<typeof decodeJob> | undefined;
      expect(() => {
        r = decodeJob("j/x", bytes);
      }).not.toThrow(StoreCorruptedError);
      expect(r!.priority).toBe(3);
      expect(r!.headers).toEqual({ tenant: "a" });
      expect(Object.hasOwn(r!, "runAt")).toBe(true);
      expect(r!.runAt).toBeUndefined();
    });
  });

  it("decodes headers named as a setter no job field is named as, each the headers' own", async () => {
    const bytes = encodeJob({ ...RECORD, headers: { tenant: "a", region: "eu" } });
    await whileDefined({ tenant: { get: () => undefined, set: () => {} } }, async () => {
      const r = decodeJob("j/x", bytes);
      expect(Object.hasOwn(r.headers!, "tenant")).toBe(true);
      expect({ ...r.headers }).toEqual({ tenant: "a", region: "eu" });
      expect(Buffer.from(encodeJob(r)).equals(Buffer.from(bytes))).toBe(true);
    });
  });

  it("decodes an attempt history and a superseded mark to their own fields under setters of their names", async () => {
    const history = encodeHistory([{ attempt: 1, claimedAt: 2, recordedAt: 3, outcome: "retried", error: "boom" }]);
    const mark = encodeSuperseded({ by: "01HB", queue: "q", at: 1, retainUntil: 2 });
    const setter = { get: () => undefined, set: () => {} };
    await whileDefined({ error: setter, outcome: setter, by: setter, retainUntil: setter }, async () => {
      expect({ ...decodeHistory("h/x", history)[0] }).toEqual({ attempt: 1, claimedAt: 2, recordedAt: 3, outcome: "retried", error: "boom" });
      expect({ ...decodeSuperseded("v/x", mark) }).toEqual({ by: "01HB", queue: "q", at: 1, retainUntil: 2 });
    });
  });

  it("reads an attempt's absent error fields as absent while Object.prototype holds values of their names", () => {
    const history = encodeHistory([{ attempt: 1, recordedAt: 3, outcome: "lease_expired" }]);
    const read = withPolluted({ claimedAt: 9, error: "planted", errorName: "Planted", errorStack: "planted" }, () => {
      const a = decodeHistory("h/x", history)[0]!;
      return [a.claimedAt, a.error, a.errorName, a.errorStack];
    });
    expect(read).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("keeps a job's headers through a claim and a nack under a swallowing setter named as a header, and claims it again with them", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    await queue.enqueue("q", enc("own payload"), { headers: { tenant: "a" } });
    await whileDefined({ tenant: { get: () => undefined, set: () => {} } }, async () => {
      const job = await queue.claim("q");
      expect({ ...job!.headers }).toEqual({ tenant: "a" });
      await queue.nack(job!, "again");
    });
    const again = await queue.claim("q");
    expect(again!.attempt).toBe(2);
    expect({ ...again!.headers }).toEqual({ tenant: "a" });
    await queue.ack(again!);
    await queue.close();
  });

  it("keeps a job's headers through a claim and a nack under a swallowing setter, and claims it again with them", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    await queue.enqueue("q", enc("own payload"), { headers: { tenant: "a" } });
    await whileDefined({ headers: { get: () => undefined, set: () => {} } }, async () => {
      const job = await queue.claim("q");
      expect(job).not.toBeNull();
      await queue.nack(job!, "again");
    });
    const again = await queue.claim("q");
    expect(again!.attempt).toBe(2);
    expect({ ...again!.headers }).toEqual({ tenant: "a" });
    await queue.ack(again!);
    await queue.close();
  });
});

describe("a job claimed under accessors on Object.prototype named as its fields", () => {
  it("holds every field as its own, gives none to a setter, and is a plain frozen object", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("own payload"), { headers: { tenant: "a" }, priority: 2 });
    const names = ["id", "queueName", "payload", "headers", "attempt", "maxAttempts", "priority", "enqueuedAt", "claimedAt", "lease", "isLastAttempt"];
    const given: unknown[] = [];
    const accessor = { get: () => undefined, set: (v: unknown) => given.push(v) };
    await whileDefined(Object.fromEntries(names.map((n) => [n, accessor])), async () => {
      const job = (await queue.claim("q"))!;
      for (const n of names) expect(Object.hasOwn(job, n), n).toBe(true);
      expect(Object.getPrototypeOf(job)).toBe(Object.prototype);
      expect(Object.isFrozen(job)).toBe(true);
      expect(new TextDecoder().decode(job.payload)).toBe("own payload");
      expect({ ...job.headers }).toEqual({ tenant: "a" });
      expect(job.priority).toBe(2);
      expect(job.isLastAttempt()).toBe(false);
      await queue.ack(job);
    });
    expect(given).toEqual([]);
    expect((await queue.view().stats("q")).done).toBe(1);
    await queue.close();
  });
});
