import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { JobRunner, LocalStore, Queue } from "taquba";
import { addJob } from "./fixtures.js";

const script = fileURLToPath(new URL("./fixtures/fanout-worker.ts", import.meta.url));
const N = 24;

async function logLines(log: string): Promise<string[]> {
  try {
    return (await readFile(log, "utf8")).split("\n").filter((l) => l.length > 0);
  } catch {
    return [];
  }
}

function startWorker(dir: string, log: string) {
  const child = spawn(process.execPath, ["--import", "tsx", script, dir, String(N), log], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

describe("job groups across crashes", () => {
  it("a fan-out killed with SIGKILL mid-way completes after a restart with one result per job, in submission order", { timeout: 60_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), "jobs-crash-"));
    const log = join(dir, "runs.log");
    try {
      const w = startWorker(dir, log);
      const started = Date.now();
      while (w.child.exitCode === null && (await logLines(log)).length < 6 && Date.now() - started < 20_000) {
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(w.child.exitCode, w.stderr()).toBeNull();
      w.child.kill("SIGKILL");
      await w.exited;
      const before = (await logLines(log)).length;
      expect(before).toBeLessThan(N);

      const again = startWorker(dir, log);
      expect(await again.exited, again.stderr()).toBe(0);

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
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
