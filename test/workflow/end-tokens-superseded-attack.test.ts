/**
 * @module Attack on reading the job a run's end token names, for the end a
 * debounce makes when it replaces a waiting run (`superseded:<job id>`):
 * the token names the job it replaced, with or without a requeue count, and
 * never the prefix's word, which a caller may have given a job of its own
 * as its id (a dead job "superseded" in the step queue would then be taken
 * for the run's final step by an inspection or a redrive).
 */
import { describe, expect, it } from "vitest";
import { jobIdOfEnd, tokenWithoutWorker } from "../../runtime/workflow/runs/end-tokens.js";

const JOB = "01KBE3Y6QGZ8W4XJ0SZ4Z6TABC";

describe("a superseded run's end token", () => {
  it("names the job the debounce replaced, with or without a requeue count", () => {
    expect(jobIdOfEnd({ token: tokenWithoutWorker("superseded", JOB), errorKind: "superseded" })).toBe(JOB);
    expect(jobIdOfEnd({ token: tokenWithoutWorker("superseded", JOB, 2), errorKind: "superseded" })).toBe(JOB);
    expect(jobIdOfEnd({ token: `superseded:${JOB}`, errorKind: "superseded" })).not.toBe("superseded");
  });

  it("still names the job of every other form", () => {
    for (const kind of ["cancelled", "dead_lettered"] as const) expect(jobIdOfEnd({ token: tokenWithoutWorker(kind, JOB, 1), errorKind: kind })).toBe(JOB);
    expect(jobIdOfEnd({ token: `${JOB}:2:r1`, errorKind: "cancelled" })).toBe(JOB);
  });
});
