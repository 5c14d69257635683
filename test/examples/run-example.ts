/**
 * @module The examples' smoke tests' runner (examples*.test.ts): each
 * example runs as its own child process, as a user would run it, and must
 * exit 0 within its time limit; its output is handed to the test.
 */
import { spawnTied } from "../support/tied-children.js";
import { scaledForLoad } from "../support/load.js";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function run(args: string[], timeoutMs: number): Promise<Ran> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout also ends the worker processes an example started.
    const child = spawnTied(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => (stdout += String(d)));
    child.stderr!.on("data", (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
      reject(new Error(`${args.join(" ")} did not finish within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// A guard against a hang, not a speed check: each example spawns processes that
// load TypeScript through tsx, which takes tens of seconds on a loaded machine.
const EXAMPLE_LIMIT_MS = scaledForLoad(90_000);
export const EXAMPLE_TEST_MS = EXAMPLE_LIMIT_MS + 10_000;

export async function example(name: string, timeoutMs = EXAMPLE_LIMIT_MS): Promise<string> {
  const r = await run(["--import", "tsx", `examples/${name}.ts`], timeoutMs);
  expect(r.code, `examples/${name}.ts exited with ${r.code ?? r.signal}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
  return r.stdout;
}

/** The lines of `out` matching `re`. */
export const lines = (out: string, re: RegExp) => out.split("\n").filter((l) => re.test(l));
