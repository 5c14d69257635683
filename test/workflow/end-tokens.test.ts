/**
 * @module The tokens that name a run's ends: the forms earlier versions
 * wrote (no requeue count) and the forms after a requeue both name their
 * job, and a worker-less end is told from a worker's by its prefix
 * whatever follows it.
 */
import { describe, expect, it } from "vitest";
import { deliveryToken, endedWithoutWorker, jobIdOfToken, tokenWithoutWorker } from "../../runtime/workflow/runs/end-tokens.js";

const JOB = "01KBE3Y6QGZ8W4XJ0SZ4Z6TABC";

describe("end tokens", () => {
  it("a job never requeued keeps the forms earlier versions wrote", () => {
    expect(deliveryToken(JOB, 3, undefined)).toBe(`${JOB}:3`);
    expect(deliveryToken(JOB, 3, 0)).toBe(`${JOB}:3`);
    expect(tokenWithoutWorker("dead_lettered", JOB)).toBe(`dead:${JOB}`);
    expect(tokenWithoutWorker("cancelled", JOB, 0)).toBe(`cancel:${JOB}`);
    expect(tokenWithoutWorker("superseded", JOB)).toBe(`superseded:${JOB}`);
  });

  it("each requeue gives the job's ends tokens of their own", () => {
    const tokens = [0, 1, 2].flatMap((n) => [deliveryToken(JOB, 1, n), tokenWithoutWorker("dead_lettered", JOB, n)]);
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(deliveryToken(JOB, 1, 2)).toBe(`${JOB}:1:r2`);
    expect(tokenWithoutWorker("dead_lettered", JOB, 2)).toBe(`dead:${JOB}:r2`);
  });

  it("every form names its job, old and new", () => {
    for (const token of [`${JOB}:1`, `${JOB}:12:r3`, `dead:${JOB}`, `dead:${JOB}:r1`, `cancel:${JOB}`, `cancel:${JOB}:r4`, "a_b-c:2"]) {
      expect(jobIdOfToken(token), token).toBe(token.replace(/^(dead|cancel):/, "").split(":")[0]);
    }
    expect(jobIdOfToken(`${JOB}`)).toBeUndefined();
    expect(jobIdOfToken(":1")).toBeUndefined();
  });

  it("a worker-less end is told by its prefix and kind, with or without a count", () => {
    expect(endedWithoutWorker(`dead:${JOB}:r1`, "dead_lettered")).toBe(true);
    expect(endedWithoutWorker(`cancel:${JOB}:r2`, "cancelled")).toBe(true);
    expect(endedWithoutWorker(`${JOB}:1:r1`, "cancelled")).toBe(false);
    expect(endedWithoutWorker(`dead:${JOB}`, "permanent")).toBe(false);
  });
});
