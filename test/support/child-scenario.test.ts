/**
 * @module A wait bounded by a child's CPU time fails when the child spins
 * without getting there, and not when it sits idle (that is left to the
 * scenario's deadline); a deadline made with a stretch ends that many
 * times later. Real child processes; the CPU time is read from /proc.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ChildScenario, ScenarioTimeoutError } from "./child-scenario.js";
import { type ChildScript, startScript } from "./child-script.js";
import { loadLimitTimeout } from "./load.js";
import { processCpuMs } from "./process-cpu.js";
import { useTempDirs } from "./temp-dirs.js";

const tempDir = useTempDirs("taquba-child-scenario-");
const STARTS_MS = 20_000;

/** A child that prints `ready`, then runs `body`. */
async function child(body: string): Promise<ChildScript> {
  const file = join(await tempDir(), "child.mjs");
  await writeFile(file, `process.stdout.write("ready\\n");\n${body}\n`);
  return startScript(file, []);
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err as Error,
  );

describe("a child process's CPU time", () => {
  it("is read for a live process, grows with its work, and is undefined for no process", () => {
    const before = processCpuMs(process.pid)!;
    // Spins for 200 ms of this process's CPU time as Node counts it (wall time would depend on the load).
    const from = process.cpuUsage();
    for (let spent = process.cpuUsage(from); spent.user + spent.system < 200_000; spent = process.cpuUsage(from));
    expect(processCpuMs(process.pid)! - before).toBeGreaterThanOrEqual(180);
    expect(processCpuMs(2 ** 22 + 1)).toBeUndefined();
  });
});

describe("a ChildScenario wait bounded by a child's CPU time", () => {
  it("fails once a child that spins spent its budget, long before the deadline", { timeout: loadLimitTimeout(STARTS_MS) }, async () => {
    const scenario = ChildScenario.stretchedByLoad(STARTS_MS);
    try {
      const spinner = scenario.track("spinner", await child("for (;;);"));
      await scenario.line("spinner", spinner, (l) => l === "ready", "ready", STARTS_MS);
      const err = await failure(scenario.line("spinner", spinner, (l) => l === "never", "a line it never prints", { cpuMs: 300, of: spinner }));
      expect(err).toBeInstanceOf(ScenarioTimeoutError);
      expect(err?.message).toMatch(/the child spent \d+ ms of CPU time, past its budget of 300 ms\) waiting for spinner: a line it never prints/);
      expect(scenario.remainingMs).toBeGreaterThan(0);
    } finally {
      await scenario.stop();
    }
  });

  it("does not spend the budget of a child that sits idle: the scenario's deadline ends that wait", { timeout: loadLimitTimeout(STARTS_MS) }, async () => {
    const start = Date.now();
    const scenario = new ChildScenario(STARTS_MS);
    try {
      const idle = scenario.track("idle", await child("setInterval(() => {}, 1000);"));
      await scenario.line("idle", idle, (l) => l === "ready", "ready", STARTS_MS);
      const waitStart = Date.now();
      // The scenario's deadline is 1.5 s after the child was ready: the CPU budget, a fifth of that, must not end the wait first.
      const short = new ChildScenario(waitStart - start + 1_500);
      short.track("idle", idle);
      const err = await failure(short.until("a condition that never holds", () => false, { cpuMs: 300, of: idle }));
      expect(err).toBeInstanceOf(ScenarioTimeoutError);
      expect(err?.message).toMatch(/\(the scenario's deadline\) waiting for a condition that never holds/);
    } finally {
      await scenario.stop();
    }
  });
});

describe("a ChildScenario deadline with a stretch", () => {
  it("ends the stretch times later, with the largest stretch read", async () => {
    const reads = [3, 1];
    const scenario = new ChildScenario(200, () => reads.shift() ?? 1);
    const start = Date.now();
    const err = await failure(scenario.until("never", () => false, 60_000));
    expect(err?.message).toMatch(/the scenario's deadline/);
    expect(Date.now() - start).toBeGreaterThanOrEqual(600);
  });
});
