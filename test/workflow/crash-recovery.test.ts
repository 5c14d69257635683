import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LocalStore, MemoStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime } from "taquba";

const script = fileURLToPath(new URL("./fixtures/crash-worker.ts", import.meta.url));
const N_RUNS = 10;
const STEPS = 5;
const KILLS = 5;

async function logLines(log: string): Promise<number> {
  try {
    return (await readFile(log, "utf8")).split("\n").length - 1;
  } catch {
    return 0;
  }
}

function startWorker(dir: string, log: string) {
  const child = spawn(process.execPath, ["--import", "tsx", script, dir, String(N_RUNS), log], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

describe("crash recovery", () => {
  it("every run reaches exactly one terminal outcome across repeated SIGKILLs, memoized effects observed once", { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), "wf-crash-"));
    const log = join(dir, "effects.log");
    try {
      let kills = 0;
      for (let i = 0; i < KILLS; i++) {
        const w = startWorker(dir, log);
        // Wait until this process makes progress (a new side effect logged), then kill it at a random point.
        const before = await logLines(log);
        const started = Date.now();
        while (w.child.exitCode === null && (await logLines(log)) === before && Date.now() - started < 20_000) {
          await new Promise((r) => setTimeout(r, 5));
        }
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 120)));
        if (w.child.exitCode === null) {
          w.child.kill("SIGKILL");
          kills++;
        }
        const code = await w.exited;
        if (code !== null && code !== 0) throw new Error(`worker failed: ${w.stderr()}`);
      }
      const last = startWorker(dir, log);
      const code = await last.exited;
      expect(code, last.stderr()).toBe(0);

      const store = new LocalStore(join(dir));
      const queue = await Queue.open(store, "wf");
      const runtime = WorkflowRuntime.builder(queue, store, { runStep: async () => StepOutcome.fail("unused") }, NoopTerminalHook).build();
      const memos = new MemoStore(store, "workflow-steps-memo");
      const lines = (await readFile(log, "utf8")).trim().split("\n").map((l) => l.split(" "));
      let duplicates = 0;
      for (let r = 0; r < N_RUNS; r++) {
        const runId = `run-${r}`;
        const status = await runtime.status(runId);
        expect(status).toMatchObject({ state: "terminated", status: "succeeded", step: STEPS - 1 });
        const outcome = await runtime.outcome(runId);
        const result = new TextDecoder().decode(outcome!.result);
        const parts = result.split(";").filter(Boolean);
        expect(parts.map((p) => p.split("=")[0])).toEqual(["0", "1", "2", "3", "4"]);
        for (const p of parts) {
          const [step, nonce] = p.split("=") as [string, string];
          const logged = lines.filter(([id, s]) => id === runId && s === step).map(([, , n]) => n);
          // The nonce the run carried is the memoized one, and the side effect that produced it ran.
          expect(logged).toContain(nonce);
          // Every later delivery observed the memoized value: the one the run carried.
          const memo = await memos.newMemo(runId, Number(step)).memoized("effect", async () => "absent");
          expect(memo).toBe(nonce);
          duplicates += logged.length - 1;
        }
      }
      expect(kills).toBeGreaterThanOrEqual(3);
      // A computation re-runs only when a kill lands between its side effect and its memo
      // write, which at most the 4 steps running at the kill can be in.
      if (process.env.CRASH_TEST_DEBUG) console.log({ kills, logLines: lines.length, duplicates });
      expect(duplicates).toBeLessThanOrEqual(kills * 4);
      expect((await queue.view().stats("workflow-steps")).dead).toBe(0);
      await queue.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
