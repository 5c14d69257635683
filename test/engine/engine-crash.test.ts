import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { Engine, LocalStore } from "taquba";

const fixture = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Runs the writer until it has reported `target` durable batches, then SIGKILLs it at a random moment. */
async function runAndKill(dir: string, tag: string, target: number, extraDelayMs: number): Promise<string[]> {
  const child = spawn(process.execPath, ["--import", "tsx", fixture, dir, tag, "4"], { stdio: ["ignore", "pipe", "pipe"] });
  const durable: string[] = [];
  let stderr = "";
  let buffered = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) if (line.startsWith("D ")) durable.push(line.slice(2));
      if (durable.length >= target) resolve();
    });
    void exited.then((code) => reject(new Error(`writer exited early (${code}): ${stderr}`)));
  });
  await new Promise((r) => setTimeout(r, extraDelayMs));
  child.kill("SIGKILL");
  await exited;
  // Lines printed before the kill are still in the pipe.
  for (const line of buffered.split("\n")) if (line.startsWith("D ")) durable.push(line.slice(2));
  return durable;
}

describe("engine crash recovery", () => {
  it("recovers every durable commit and no half batch after SIGKILL, repeatedly", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "taquba-crash-"));
    dirs.push(dir);
    const allDurable: string[] = [];
    for (let round = 0; round < 6; round++) {
      const target = 20 + Math.floor(Math.random() * 800);
      const delay = Math.floor(Math.random() * 40);
      allDurable.push(...(await runAndKill(dir, `r${round}`, target, delay)));

      const engine = await Engine.open(new LocalStore(dir));
      const batches = new Map<string, number>();
      for (const [key, value] of engine.scan({ prefix: "b/" })) {
        const id = key.split("/")[1]!;
        expect(new TextDecoder().decode(value)).toBe(id);
        batches.set(id, (batches.get(id) ?? 0) + 1);
      }
      for (const [id, n] of batches) expect(n, `batch ${id} is half applied`).toBe(3);
      for (const id of allDurable) expect(batches.has(id), `durable batch ${id} is missing`).toBe(true);
      // The per-loop counter is at least the newest durable batch of that loop.
      for (const id of allDurable.filter((d) => d.startsWith(`r${round}-`))) {
        const [, w, i] = id.split("-");
        const last = Number(new TextDecoder().decode(engine.get(`last/r${round}-${w}`)));
        expect(last).toBeGreaterThanOrEqual(Number(i));
      }
      await engine.close();
    }
    expect(allDurable.length).toBeGreaterThan(100);
  }, 60_000);
});
