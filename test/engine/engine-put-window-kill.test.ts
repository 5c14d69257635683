/**
 * @module SIGKILL from inside a put, at each window of it (see
 * kill-in-put.ts): a writer committing crash batches over a local
 * directory dies in the nth put of its WAL or of its manifests, before the
 * write, half way through it, with the file whole but not under its name, or under its name before the directory sync and the
 * acknowledgement. Each window is hit on every run (the child says so before
 * dying). After each kill a reopen must hold every batch acknowledged as
 * durable, none half applied, and show no temporary file as an object; the
 * next writer then runs over what the killed one left.
 */
import { readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { durableIds } from "../support/crash-output.js";
import { expectCrashState } from "../support/crash-state.js";
import { type KillInPut, killInPutEnv, PUT_WINDOWS } from "../support/kill-in-put.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const fixture = fileURLToPath(new URL("./fixtures/put-window-kill-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-put-window-kill-");

/**
 * The puts to die in: a WAL object well into the run, and a checkpoint's
 * manifest (the first is the open's claim). A segment put passes the same
 * windows as a WAL put (create-if-absent, in its own directory); left out
 * to keep the file's run time down (each window is a process start).
 */
const TARGETS = [
  { dirName: "wal%2F", nth: 9 },
  { dirName: "manifest%2F", nth: 3 },
] as const;

/** Runs the writer until its kill, checks the window was reached, and returns its output lines and the temporary file it left. */
async function runUntilKilled(dir: string, tag: string, kill: KillInPut): Promise<{ lines: readonly string[]; temp: string }> {
  const child = startScript(fixture, [dir, tag], { env: { ...process.env, TAQUBA_TEST_KILL_IN_PUT: killInPutEnv(kill) } });
  const exit = await child.exited;
  expect(exit.signal, `${tag} ended without its kill: ${child.stderr()}`).toBe("SIGKILL");
  const k = child.lines.find((l) => l.startsWith("K "));
  expect(k, `${tag} was killed before reaching ${kill.window}`).toBeDefined();
  const [, window, temp] = k!.split(" ");
  expect(window).toBe(kill.window);
  expect(backgroundFailures(child)).toEqual([]);
  return { lines: child.lines, temp: temp! };
}

/** Checks what a killed put left on disk in its window. */
async function expectLeftInWindow(window: string, temp: string): Promise<void> {
  const size = await stat(temp).then(
    (s) => s.size,
    () => -1,
  );
  // The file stays under its temporary name in every window (a create-if-absent put links a second name to it).
  expect(size, `${window}: the temporary file ${temp}`).toBeGreaterThanOrEqual(0);
  if (window === "before-write") expect(size).toBe(0);
  if (window !== "before-write") expect(size).toBeGreaterThan(0);
}

/** A killed writer, told apart from any later process given its pid by its store's tag (every temporary name it made holds both). */
interface KilledWriter {
  pid: number;
  tag: string;
}

/** The writer that made the temporary file `temp` (`%tmp.<pid>.<n>.<tag>`). */
function writerOf(temp: string): KilledWriter {
  const [, pid, , tag] = basename(temp).split(".");
  return { pid: Number(pid), tag: tag! };
}

/**
 * Whether the temporary file `name` is a killed writer's whose pid another
 * process took since (pids wrap): `removeLeftovers` keeps a file whose pid
 * runs, as it promises, so only such a file may be left.
 */
function ofKilledPidTaken(name: string, killed: readonly KilledWriter[]): boolean {
  const w = writerOf(name);
  return killed.some((k) => k.pid === w.pid && k.tag === w.tag) && pidRuns(w.pid);
}

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

// One target after another: the children a test starts are killed when any test ends (tied-children.ts).
describe("an engine writer killed inside a put, at each window of it", () => {
  it.each(TARGETS)("puts into $dirName: every acknowledged batch survives, nothing torn is visible", { timeout: loadLimitTimeout(90_000) }, (target) =>
    withinLoadLimit(90_000, async () => {
      const dir = await tempDir();
      const allDurable: string[] = [];
      const killed: KilledWriter[] = [];
      for (const [round, window] of PUT_WINDOWS.entries()) {
        const tag = `w${round}`;
        const { lines, temp } = await runUntilKilled(dir, tag, { window, ...target });
        killed.push(writerOf(temp));
        await expectLeftInWindow(window, temp);
        allDurable.push(...durableIds(lines));
        const store = new LocalStore(dir);
        // No temporary file shows as an object, whatever it holds.
        for await (const o of store.list("")) expect(o.key).not.toContain("%tmp.");
        const engine = await Engine.open(store);
        try {
          expectCrashState(engine, allDurable, tag);
        } finally {
          await engine.close();
        }
        // The open removed the killed writer's leftovers in that directory.
        const left = (await readdir(join(dir, target.dirName))).filter((n) => n.startsWith("%tmp.") && !ofKilledPidTaken(n, killed));
        expect(left, `${window}: leftovers after the reopen`).toEqual([]);
      }
      expect(allDurable.length).toBeGreaterThan(PUT_WINDOWS.length);
    }),
  );
});
