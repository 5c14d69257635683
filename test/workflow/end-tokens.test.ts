/**
 * @module The tokens that name a run's ends: the forms earlier versions
 * wrote (no requeue count) and the forms after a requeue both name their
 * job, and a worker-less end is told from a worker's by its prefix
 * whatever follows it.
 */
import { describe, expect, it } from "vitest";
import { deliveryToken, endedWithoutWorker, jobIdOfEnd, tokenWithoutWorker } from "../../runtime/workflow/runs/end-tokens.js";

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
    const kindOf = (token: string) => (token.startsWith("dead:") ? "dead_lettered" : token.startsWith("cancel:") ? "cancelled" : "permanent");
    for (const token of [`${JOB}:1`, `${JOB}:12:r3`, `dead:${JOB}`, `dead:${JOB}:r1`, `cancel:${JOB}`, `cancel:${JOB}:r4`, "a_b-c:2"]) {
      expect(jobIdOfEnd({ token, errorKind: kindOf(token) }), token).toBe(token.replace(/^(dead|cancel):/, "").split(":")[0]);
    }
    expect(jobIdOfEnd({ token: `${JOB}` })).toBeUndefined();
    expect(jobIdOfEnd({ token: ":1" })).toBeUndefined();
  });

  it("a worker-less end of a job named with digits never has the token of a delivery of a job named as its prefix's word", () => {
    const delivered = ["cancel", "dead", "superseded"].flatMap((w) => [0, 1, 2, 3].flatMap((n) => [1, 2, 3, 12].map((a) => deliveryToken(w, a, n))));
    const without = (["cancelled", "dead_lettered", "superseded"] as const).flatMap((k) =>
      [0, 1, 2, 3].flatMap((n) => ["1", "2", "3", "12"].map((j) => tokenWithoutWorker(k, j, n))),
    );
    expect(new Set([...delivered, ...without]).size).toBe(delivered.length + without.length);
    expect(tokenWithoutWorker("cancelled", "1")).toBe("cancel:1:r0");
    expect(tokenWithoutWorker("dead_lettered", "12", 3)).toBe("dead:12:r03");
    // Each names its job, as an earlier version reads it too (the id before the next ':').
    expect(jobIdOfEnd({ token: "dead:12:r03", errorKind: "dead_lettered" })).toBe("12");
    expect(jobIdOfEnd({ token: "dead:12:r03", errorKind: "permanent" })).toBe("dead");
    // A word's own job, with another id after it, keeps the form of every version.
    expect(tokenWithoutWorker("dead_lettered", "dead", 2)).toBe("dead:dead:r2");
  });

  it("a worker-less end is told by its prefix and kind, with or without a count", () => {
    expect(endedWithoutWorker(`dead:${JOB}:r1`, "dead_lettered")).toBe(true);
    expect(endedWithoutWorker(`cancel:${JOB}:r2`, "cancelled")).toBe(true);
    expect(endedWithoutWorker(`${JOB}:1:r1`, "cancelled")).toBe(false);
    expect(endedWithoutWorker(`dead:${JOB}`, "permanent")).toBe(false);
  });
});
