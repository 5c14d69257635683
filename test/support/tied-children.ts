/**
 * @module Child processes tied to the test that starts them. A test that
 * times out or fails, or a test worker that is killed, must not leave a
 * child running (a crash child still writing, an Azurite still listening),
 * so every child a test starts goes through `spawnTied`:
 *
 * - a Node child gets test/support/lifeline.mjs preloaded and a stdin pipe
 *   from this process; the pipe ends when this process ends, however it
 *   ends (SIGKILL included), and the child then exits on its own;
 * - every child is SIGKILLed (its process group, when detached) when this
 *   process exits, and by test/support/tied-children.setup.ts after the
 *   test that started it (or after the file, for one started in a
 *   beforeAll), whether that test passed, failed or timed out.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { fileURLToPath } from "node:url";

const LIFELINE = fileURLToPath(new URL("./lifeline.mjs", import.meta.url));

/** Which test a child belongs to: "file" for one started outside a test (in a beforeAll). */
type Scope = "file" | symbol;
let currentScope: Scope = "file";
const live = new Map<ChildProcess, { scope: Scope; detached: boolean }>();

function killNow(child: ChildProcess, detached: boolean): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    // A detached child leads its own process group: end what it started too.
    if (detached && child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    else child.kill("SIGKILL");
  } catch {
    // Already gone.
  }
}

process.once("exit", () => {
  for (const [child, { detached }] of live) killNow(child, detached);
});

/**
 * `child_process.spawn`, tied to this process and to the current test (see
 * the module comment). stdin is the lifeline pipe: a tied child cannot be
 * given other input. A Node child (`command` is `process.execPath`) also
 * exits by itself when this process disappears.
 */
export function spawnTied(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const isNode = command === process.execPath;
  const stdio = options.stdio;
  const rest = Array.isArray(stdio) ? stdio.slice(1) : [stdio ?? "pipe", stdio ?? "pipe"];
  const child = spawn(command, isNode ? ["--import", LIFELINE, ...args] : [...args], {
    ...options,
    stdio: ["pipe", ...rest],
    env: { ...(options.env ?? process.env), TAQUBA_TEST_LIFELINE: "1" },
  });
  const entry = { scope: currentScope, detached: options.detached === true };
  live.set(child, entry);
  child.once("exit", () => live.delete(child));
  // The child may exit before reading it; a write error on the lifeline is not the test's concern.
  child.stdin?.on("error", () => undefined);
  return child;
}

/** SIGKILLs the children of `scope` (every child, without one) and waits until they exited. */
async function killTied(scope?: Scope): Promise<void> {
  const ending: Promise<unknown>[] = [];
  for (const [child, entry] of live) {
    if (scope !== undefined && entry.scope !== scope) continue;
    if (child.exitCode !== null || child.signalCode !== null) continue;
    ending.push(new Promise((resolve) => child.once("exit", resolve)));
    killNow(child, entry.detached);
  }
  await Promise.all(ending);
}

/** For the setup file: a test starts; children started from now on belong to it. */
export function beginTestScope(): void {
  currentScope = Symbol("test");
}

/**
 * SIGKILLs the children of the test running now and waits until they
 * exited, keeping the test's scope. For cleanup that must come after the
 * children are gone, such as removing the directories they write to:
 * vitest runs the `afterEach` hooks of a test file before those of the
 * setup file, so `endTestScope` comes too late for them.
 */
export async function killTestChildren(): Promise<void> {
  if (currentScope !== "file") await killTied(currentScope);
}

/** For the setup file: the test ended; its children are killed. */
export async function endTestScope(): Promise<void> {
  const scope = currentScope;
  currentScope = "file";
  await killTied(scope);
}

/** For the setup file: the file ended; every child still running is killed. */
export async function endFileScope(): Promise<void> {
  await killTied();
}

/** How many tied children are running (for the test of this module). */
export function tiedChildrenRunning(): number {
  let n = 0;
  for (const child of live.keys()) if (child.exitCode === null && child.signalCode === null) n++;
  return n;
}
