/**
 * @module A job group fan-out across a SIGKILL: the worker process is killed
 * mid-way and restarted, and the group still ends with one result per job.
 */
import { describe, expect, it } from "vitest";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { JobRunner, LocalStore, Queue } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { addJob } from "./fixtures.js";

const script = fileURLToPath(new URL("./fixtures/fanout-worker.ts", import.meta.url));
const N = 24;
const tempDir = useTempDirs("jobs-crash-");

async function logLines(log: string): Promise<string[]> {
  return (await readFile(log, "utf8")).split("\n").filter((l) => l.length > 0);
}

describe("job groups across crashes", () => {
  // Two children that load the package through tsx (about 3 s of CPU each to start): 35-59 s of wall time on
  // two cores at load 14-20. The limit guards against a hang and is stretched by the load (support/load.ts).
  it(
    "a fan-out killed with SIGKILL mid-way completes after a restart with one result per job, in submission order",
    {
      timeout: loadLimitTimeout(60_000),
    },
    () =>
      withinLoadLimit(60_000, async () => {
        const dir = await tempDir();
        const log = join(dir, "runs.log");
        // The first life stalls after 6 handler runs, so it cannot finish before the kill.
        // The children draw their handler delays from this seed.
        const rng = testRandom("job group crash");
        const w = startScript(script, [dir, String(N), log, "6"], { env: rng.childEnv() });
        await w.waitFor((lines) => lines.length >= 6);
        expect((await w.kill()).signal, w.stderr()).toBe("SIGKILL");
        expect(backgroundFailures(w)).toEqual([]);
        const before = (await logLines(log)).length;
        expect(before).toBeLessThan(N);

        const again = startScript(script, [dir, String(N), log], { env: rng.childEnv() });
        expect((await again.exited).code, again.stderr()).toBe(0);
        expect(backgroundFailures(again)).toEqual([]);

        const store = new LocalStore(dir);
        const queue = await Queue.open(store, "q");
        const runner = JobRunner.builder(queue, store).build();
        const group = runner.group("crash", addJob);
        const results = await group.join();
        expect(results.map((r) => r.key)).toEqual(Array.from({ length: N }, (_, i) => `item-${i}`));
        expect(results.map((r) => r.outcome)).toEqual(Array.from({ length: N }, (_, i) => ({ status: "succeeded", output: i + 1000 })));
        expect(await group.status()).toMatchObject({ total: N, succeeded: N, pending: 0, running: 0 });
        // At-least-once: every job ran; a job ran again only if the killed process had started it
        // (its settlement may not have become durable), and never twice in one process.
        const runs = await logLines(log);
        const firstLife = runs.slice(0, before);
        const secondLife = runs.slice(before);
        expect(new Set(runs).size).toBe(N);
        expect(new Set(firstLife).size).toBe(firstLife.length);
        expect(new Set(secondLife).size).toBe(secondLife.length);
        expect(runs.length).toBeLessThan(2 * N);
        await queue.close();
      }),
  );
});
