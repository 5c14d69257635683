/**
 * @module A run id submitted again after its run ended, with the process
 * SIGKILLed during the earlier run's end (its run result record stored but
 * the terminating commit not made; or the commit made and its terminal hook
 * running) and again between the new submission and its first step: the
 * new run computes its memos afresh and ends with its own input, never the
 * earlier run's.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import type { ChildScript } from "../support/child-script.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { livesOf } from "./fixtures/script-lives.js";

const script = fileURLToPath(new URL("./fixtures/resubmit-memo-worker.ts", import.meta.url));
const tempDir = useTempDirs("wf-resubmit-crash-");
// Up to four lives, each a child that loads the runtime through tsx (about 3 s of CPU to start).
const LIMIT_MS = scaledForLoad(120_000);

/** Runs one life of the worker script to its end; returns it once it exited as `how` says. */
const life = livesOf(script);

const computations = (c: ChildScript) => c.lines.filter((l) => l.startsWith("C "));
const result = (c: ChildScript) => c.lines.find((l) => l.startsWith("R "));

describe("a run id submitted again across SIGKILLs", () => {
  it("killed once the earlier run's result record is stored, and after the new submission: the new run reads none of its memos", {
    timeout: LIMIT_MS,
  }, async () => {
    const dir = await tempDir();
    const first = await life(["run", dir, "one", "result"], "killed");
    expect(computations(first)).toEqual(["C step one", "C run one"]);
    // The earlier run ends in the next life, reading its own memos.
    const ended = await life(["run", dir, "one"], "exits");
    expect(computations(ended)).toEqual([]);
    expect(result(ended)).toBe("R one|one|");
    await life(["resubmit", dir, "two"], "killed");
    const again = await life(["run", dir, "two"], "exits");
    expect(computations(again)).toEqual(["C step two", "C run two"]);
    expect(result(again)).toBe("R two|two|");
  });

  it("killed in the earlier run's terminal hook, after its end committed, and after the new submission: the new run reads none of its memos", {
    timeout: LIMIT_MS,
  }, async () => {
    const dir = await tempDir();
    const first = await life(["run", dir, "one", "hook"], "killed");
    expect(computations(first)).toEqual(["C step one", "C run one"]);
    await life(["resubmit", dir, "two"], "killed");
    const again = await life(["run", dir, "two"], "exits");
    expect(computations(again)).toEqual(["C step two", "C run two"]);
    expect(result(again)).toBe("R two|two|");
  });
});
