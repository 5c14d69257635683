/**
 * @module A process that opens a second store, queue or runtime keeps the
 * step path's code optimized: the objects each new instance makes (a
 * runtime's wait poll, a store's WAL writer, a memtable's changed keys)
 * have the hidden classes, elements kinds and field values the code was
 * optimized for on the first instance's, so their first use deoptimizes
 * nothing. Before, a fresh instance's empty lists were small integers
 * (`[]`), a map's values array small integers until its first store, and
 * a hash start past 2^31 a heap number: each deoptimized the functions
 * optimized on the last instance, which then ran unoptimized for windows.
 * Run in a child process that turns on V8's natives syntax.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startScript } from "../support/child-script.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/fresh-instance-optimized.ts", import.meta.url));

describe("a fresh instance's objects", () => {
  it(
    "keep the functions optimized on an earlier instance's optimized: the wait poll's join, the WAL writer's waitAppended, the changed keys' set",
    async () => {
      const child = startScript(FIXTURE, ["200"]);
      const exit = await child.exited;
      expect(exit, child.stderr()).toEqual({ code: 0, signal: null });
      const report = JSON.parse(child.lines.at(-1)!) as Record<string, { before: boolean; after: boolean }>;
      expect(report).toEqual({
        "WaitPoll.join": { before: true, after: true },
        "WalWriter.waitAppended": { before: true, after: true },
        "ChangedKeys.set": { before: true, after: true },
      });
    },
    HEAVY_TEST_MS,
  );
});
