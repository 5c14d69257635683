/**
 * @module A bounded scenario over child processes: every wait of a process
 * test goes through one deadline, set well before the test's timeout, and a
 * wait that runs out fails with what the children were doing (their state,
 * last lines and stderr) and whatever else the test reports (the runs still
 * missing), instead of hanging until the test runner gives up with nothing.
 * `stop` SIGKILLs every child (SIGCONT first, for one left stopped) and
 * waits for it to exit, so the test's directories can be removed afterwards.
 * `runToEnd` ends a scenario the way every process test does: the report
 * on a failed check, `stop`, then the children's background failures.
 *
 * A wait can be bounded by a child's CPU time instead of wall time (see
 * process-cpu.ts): it then fails when that child spent its budget without
 * getting there (it spins), not when a loaded machine ran it slowly; the
 * scenario's deadline, stretched by the load when made with
 * `stretchedByLoad`, is left to catch a child that hangs without running.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ChildExit, ChildScript } from "./child-script.js";
import { type ExpectedFailure, unexpectedFailures } from "./background-errors.js";
import { loadFactor } from "./load.js";
import { processCpuMs } from "./process-cpu.js";

/** A wait of a `ChildScenario` that ran out. */
export class ScenarioTimeoutError extends Error {
  override name = "ScenarioTimeoutError";
}

/**
 * What bounds one wait: milliseconds of wall time, or `cpuMs` of the CPU
 * time the child `of` spends from the wait's start (it must get there
 * within that much of its own work, however slowly the machine runs it).
 */
export type WaitBound = number | { readonly cpuMs: number; readonly of: ChildScript };

/** How often a CPU-bounded wait reads the child's CPU time. */
const CPU_READ_EVERY_MS = 50;
/** How often a deadline stretched by the load reads the load again. */
const STRETCH_READ_EVERY_MS = 1_000;

interface Tracked {
  readonly name: string;
  readonly script: ChildScript;
  exit: ChildExit | undefined;
}

/** The process state letter of `pid` (R, S, T for stopped, Z), or "?" when it cannot be read. */
function procState(pid: number): string {
  try {
    return /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1] ?? "?";
  } catch {
    return "?";
  }
}

export class ChildScenario {
  readonly #children: Tracked[] = [];
  readonly #reports: Array<() => Promise<string> | string> = [];
  readonly #started = Date.now();
  readonly #budgetMs: number;
  readonly #stretch: (() => number) | undefined;
  /** The largest stretch read so far, and when it was read. */
  #stretched = 1;
  #stretchReadAt = 0;

  /** A scenario whose waits all end by `budgetMs` from now (times `stretch()`, the largest read so far, when given). */
  constructor(budgetMs: number, stretch?: () => number) {
    this.#budgetMs = budgetMs;
    this.#stretch = stretch;
  }

  /**
   * A scenario whose deadline is `budgetMs` stretched by the load as
   * `withinLoadLimit` stretches a test's limit (2 to 4 times, the largest
   * read so far): give its test `{ timeout: loadLimitTimeout(budgetMs) }`.
   */
  static stretchedByLoad(budgetMs: number): ChildScenario {
    return new ChildScenario(budgetMs, loadFactor);
  }

  get #giveUpAt(): number {
    if (this.#stretch !== undefined && Date.now() - this.#stretchReadAt >= STRETCH_READ_EVERY_MS) {
      this.#stretched = Math.max(this.#stretched, this.#stretch());
      this.#stretchReadAt = Date.now();
    }
    return this.#started + Math.round(this.#budgetMs * this.#stretched);
  }

  /** Tracks `script` under `name`: it is reported on a timeout and killed by `stop`. */
  track(name: string, script: ChildScript): ChildScript {
    const t: Tracked = { name, script, exit: undefined };
    void script.exited.then((e) => (t.exit = e));
    this.#children.push(t);
    return script;
  }

  /** Adds a section to the report of a timeout (it must not hang: bound its own IO). */
  onReport(section: () => Promise<string> | string): void {
    this.#reports.push(section);
  }

  /** Milliseconds left before the scenario's deadline. */
  get remainingMs(): number {
    return this.#giveUpAt - Date.now();
  }

  /**
   * Resolves once `cond()` holds, checking every 5 ms; fails with the report
   * once `bound` is spent (wall time, or the CPU time of a child) or at the
   * scenario's deadline, whichever is first.
   */
  async until(what: string, cond: () => Promise<boolean> | boolean, bound: WaitBound): Promise<void> {
    const start = Date.now();
    const cpu = typeof bound === "number" ? undefined : { ...bound, from: processCpuMs(bound.of.pid) ?? 0, spent: 0, readAt: start };
    const ownGiveUp = typeof bound === "number" ? start + bound : Number.POSITIVE_INFINITY;
    while (!(await cond())) {
      const now = Date.now();
      const deadline = this.#giveUpAt;
      let why: string | undefined;
      if (now > Math.min(ownGiveUp, deadline)) why = ownGiveUp <= deadline ? `${bound as number} ms` : "the scenario's deadline";
      else if (cpu !== undefined && now - cpu.readAt >= CPU_READ_EVERY_MS) {
        // A reaped child reads as undefined: its last reading stands.
        cpu.spent = (processCpuMs(cpu.of.pid) ?? cpu.from + cpu.spent) - cpu.from;
        cpu.readAt = now;
        if (cpu.spent > cpu.cpuMs) why = `the child spent ${cpu.spent} ms of CPU time, past its budget of ${cpu.cpuMs} ms`;
      }
      if (why !== undefined) {
        throw new ScenarioTimeoutError(`timed out after ${now - start} ms (${why}) waiting for ${what}\n${await this.report()}`);
      }
      await new Promise<void>((r) => setTimeout(r, 5));
    }
  }

  /** Waits until `script` printed a line `match` accepts; fails at once with the report if it exits first. */
  async line(name: string, script: ChildScript, match: (line: string) => boolean, what: string, bound: WaitBound): Promise<void> {
    let exited = false;
    void script.exited.then(() => (exited = true));
    await this.until(
      `${name}: ${what}`,
      () => {
        if (script.lines.some(match)) return true;
        if (exited) throw new Error(`${name} exited before ${what}\n${this.#childReport(this.#find(script) ?? { name, script, exit: undefined })}`);
        return false;
      },
      bound,
    );
  }

  /** How `script` ended, once it did within `bound`. */
  async exit(name: string, script: ChildScript, bound: WaitBound): Promise<ChildExit> {
    let exit: ChildExit | undefined;
    void script.exited.then((e) => (exit = e));
    await this.until(`${name} to exit`, () => exit !== undefined, bound);
    return exit!;
  }

  #find(script: ChildScript): Tracked | undefined {
    return this.#children.find((t) => t.script === script);
  }

  #childReport(t: Tracked): string {
    const { script } = t;
    const state = t.exit !== undefined ? `exited ${JSON.stringify(t.exit)}` : `running (state ${procState(script.pid)})`;
    // Write lines are many: the last few of them, and the last of the others.
    const writes = script.lines.filter((l) => l.startsWith("write "));
    const late = script.lines.filter((l) => l.startsWith("late ")).map((l) => Number(l.split(" ")[2]));
    const others = script.lines.filter((l) => !l.startsWith("write ") && !l.startsWith("late "));
    const lateness =
      late.length === 0 ? "" : `; timers late ${late.length} times, ${late.reduce((a, b) => a + b, 0)} ms in all, ${Math.max(...late)} ms at most`;
    return [
      `--- ${t.name} (pid ${script.pid}): ${state}; ${script.lines.length} lines, ${writes.length} of them writes${lateness}`,
      ...others.slice(-15).map((l) => `  ${l.length > 300 ? `${l.slice(0, 300)}...` : l}`),
      ...(writes.length === 0 ? [] : ["  last writes:", ...writes.slice(-4).map((l) => `  ${l}`)]),
      `  stderr: ${script.stderr().slice(-1_500) || "(none)"}`,
    ].join("\n");
  }

  /**
   * The children's state, last lines and stderr, then the test's own
   * sections. With TAQUBA_TEST_CHILD_LOGS set to a directory, each child's
   * whole output is also written there.
   */
  async report(): Promise<string> {
    const parts = [`after ${Date.now() - this.#started} ms:`, ...this.#children.map((t) => this.#childReport(t))];
    const dir = process.env.TAQUBA_TEST_CHILD_LOGS;
    if (dir !== undefined && dir !== "") {
      const sub = join(dir, `${this.#started}`);
      mkdirSync(sub, { recursive: true });
      for (const t of this.#children) {
        writeFileSync(join(sub, `${t.name.replace(/[^a-z0-9]+/gi, "-")}.out`), `${t.script.lines.join("\n")}\n`);
        writeFileSync(join(sub, `${t.name.replace(/[^a-z0-9]+/gi, "-")}.err`), t.script.stderr());
      }
      parts.push(`(the children's whole output is in ${sub})`);
    }
    for (const section of this.#reports) {
      try {
        parts.push(await section());
      } catch (err) {
        parts.push(`(a report section failed: ${String(err)})`);
      }
    }
    return parts.join("\n");
  }

  /**
   * Throws when a tracked child reported a background failure (a `G` line,
   * or an error on its stderr; see background-errors.ts) that
   * `expected(name)` does not list: each one under its child's name, with
   * its stack.
   */
  expectNoUnexpectedFailures(expected: (name: string) => readonly ExpectedFailure[]): void {
    const found = this.#children.flatMap((t) => unexpectedFailures(t.script, expected(t.name)).map((f) => ({ name: t.name, f })));
    if (found.length === 0) return;
    const shown = found.map(({ name, f }) => `  ${name}: ${f.replace(/ \| at /, "\n    at ").replaceAll(" < at ", "\n    at ")}`);
    throw new Error(`${found.length} unexpected background failure${found.length === 1 ? "" : "s"} of the children:\n${shown.join("\n")}`);
  }

  /**
   * Runs `body` (the scenario's children, waits and checks) and ends the
   * scenario as every process test does: a failure of `body` other than a
   * wait that ran out (whose message carries the report already) prints
   * the report to stderr, and is rethrown; every child is stopped whatever
   * happened, before the test's directories are removed; then, once
   * `body` succeeded, the children's background failures are checked
   * (`expectNoUnexpectedFailures(expected)`). Returns what `body` did.
   */
  async runToEnd<T>(expected: (name: string) => readonly ExpectedFailure[], body: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await body();
    } catch (err) {
      if (!(err instanceof ScenarioTimeoutError)) console.error(await this.report());
      throw err;
    } finally {
      await this.stop();
    }
    this.expectNoUnexpectedFailures(expected);
    return result;
  }

  /** SIGKILLs every child still running (after a SIGCONT, for one left stopped) and waits until each exited. */
  async stop(): Promise<void> {
    await Promise.all(
      this.#children.map(async (t) => {
        if (t.exit === undefined) {
          try {
            process.kill(t.script.pid, "SIGCONT");
          } catch {
            // already gone
          }
        }
        await t.script.kill();
      }),
    );
  }
}
