/**
 * @module A wait bounded by a child's CPU time fails when the child spins
 * without getting there, and not when it sits idle (that is left to the
 * scenario's deadline); a deadline made with a stretch ends that many
 * times later; a scenario run to its end prints its report for a failed
 * check (not for a wait that ran out, which carries it), stops every
 * child however the body ended, and only then, after a body that passed,
 * fails on a child's unexpected background failure. Real child processes;
 * the CPU time is read from /proc.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
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

describe("a ChildScenario run to its end", () => {
  /** A scenario with one idle child, `name`, that printed `ready` and the background failure `G <failure>`. */
  async function withChild(name: string, failure: string): Promise<{ scenario: ChildScenario; script: ChildScript }> {
    const scenario = ChildScenario.stretchedByLoad(STARTS_MS);
    const script = scenario.track(name, await child(`process.stdout.write(${JSON.stringify(`G ${failure}\n`)});\nsetInterval(() => {}, 1000);`));
    await scenario.line(name, script, (l) => l.startsWith("G "), "its failure", STARTS_MS);
    return { scenario, script };
  }
  /** Whether `script` has exited by now (a turn of the loop lets its exit be seen). */
  const exitedNow = async (script: ChildScript) => {
    let exited = false;
    void script.exited.then(() => (exited = true));
    await new Promise((r) => setImmediate(r));
    return exited;
  };
  const FAILURE = "Error: the checkpoint could not be written";

  it("prints the report for a failed check and rethrows it, the children stopped first and their failures not checked", {
    timeout: loadLimitTimeout(STARTS_MS),
  }, async () => {
    const { scenario, script } = await withChild("owner 1", FAILURE);
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const check = new Error("expected 3 runs to equal 4");
      const err = await failure(
        scenario.runToEnd(
          () => [],
          () => Promise.reject(check),
        ),
      );
      expect(err).toBe(check);
      expect(await exitedNow(script)).toBe(true);
      expect(await script.exited).toEqual({ code: null, signal: "SIGKILL" });
      expect(printed).toHaveBeenCalledTimes(1);
      expect(String(printed.mock.calls[0]![0])).toMatch(/--- owner 1 \(pid \d+\): running \(state \S\); 2 lines/);
    } finally {
      printed.mockRestore();
      await scenario.stop();
    }
  });

  it("rethrows a wait that ran out without printing its report again, the children stopped", { timeout: loadLimitTimeout(STARTS_MS) }, async () => {
    const { scenario, script } = await withChild("client a", FAILURE);
    const printed = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const err = await failure(
        scenario.runToEnd(
          () => [],
          () => scenario.until("a line it never prints", () => false, 50),
        ),
      );
      expect(err).toBeInstanceOf(ScenarioTimeoutError);
      expect(err?.message).toMatch(/waiting for a line it never prints\nafter \d+ ms:\n--- client a/);
      expect(await exitedNow(script)).toBe(true);
      expect(printed).not.toHaveBeenCalled();
    } finally {
      printed.mockRestore();
      await scenario.stop();
    }
  });

  it("after a body that passed, fails on a background failure its child's list does not expect, naming the child, and passes on an expected one", {
    timeout: loadLimitTimeout(STARTS_MS),
  }, async () => {
    const first = await withChild("worker w2", FAILURE);
    let seen = "";
    const err = await failure(
      first.scenario.runToEnd(
        (name) => {
          seen = name;
          return [{ pattern: /^G FencedError: /, why: "another failure" }];
        },
        async () => "done",
      ),
    );
    expect(seen).toBe("worker w2");
    expect(err?.message).toBe(`1 unexpected background failure of the children:\n  worker w2: G ${FAILURE}`);
    expect(await exitedNow(first.script)).toBe(true);

    const second = await withChild("worker w3", FAILURE);
    const expected = (name: string) => (name === "worker w3" ? [{ pattern: /^G Error: the checkpoint/, why: "what this child is for" }] : []);
    expect(await second.scenario.runToEnd(expected, async () => "done")).toBe("done");
    expect(await exitedNow(second.script)).toBe(true);
  });
});
