/**
 * @module A parent run id submitted again after its run ended, by a process
 * SIGKILLed between the new submission and its first step, whose step queue
 * gives the new run's first step the earlier run's first job id: the next
 * process starts and joins a child of the new run, never the earlier one's.
 */
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import type { ChildScript } from "../support/child-script.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { livesOf } from "./fixtures/script-lives.js";

const script = fileURLToPath(new URL("./fixtures/resubmit-parent-worker.ts", import.meta.url));
const tempDir = useTempDirs("wf-resubmit-parent-crash-");
// Three lives, each a child that loads the runtime through tsx (about 3 s of CPU to start).
const LIMIT_MS = scaledForLoad(120_000);

/** Runs one life of the worker script to its end; returns it once it exited as `how` says. */
const life = livesOf(script);

const childRuns = (c: ChildScript) => c.lines.filter((l) => l.startsWith("C "));
const result = (c: ChildScript) => c.lines.find((l) => l.startsWith("R "));

describe("a parent run id submitted again, killed before its first step", () => {
  it("starts and joins a child of its own in the next process", { timeout: LIMIT_MS }, async () => {
    const dir = await tempDir();
    const first = await life(["run", dir, "one"], "exits");
    expect(childRuns(first)).toEqual(["C p-s0-0 one"]);
    expect(result(first)).toBe("R p-s0-0:one");
    await life(["resubmit", dir, "two"], "killed");
    const again = await life(["run", dir, "two"], "exits");
    const started = childRuns(again);
    expect(started).toHaveLength(1);
    expect(started[0]).toMatch(/^C p-s0-0-p[0-9A-Z]{26} two$/);
    expect(result(again)).toBe(`R ${started[0]!.split(" ")[1]}:two`);
  });
});
