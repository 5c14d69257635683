/**
 * @module A TypeScript script run in a child process (from its bundled
 * entry, see child-entry.ts),
 * for crash tests: read what it reports on stdout, then kill it with
 * SIGKILL at a chosen moment, as a power cut or an OOM kill would.
 */
import { setTimeout as delay } from "node:timers/promises";
import { backgroundFailures } from "./background-errors.js";
import { childEntry } from "./child-entry.js";
import type { TestRandom } from "./seed.js";
import { spawnTied } from "./tied-children.js";

/** How a child process ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running script; see `startScript`. */
export interface ChildScript {
  /** The process id, to send it a signal. */
  readonly pid: number;
  /** Lines the script wrote to stdout so far; after the exit, also an unterminated last line. */
  readonly lines: readonly string[];
  /** What the script wrote to stderr so far. */
  stderr(): string;
  /** Resolves once the process has exited and its output is fully read. */
  readonly exited: Promise<ChildExit>;
  /**
   * Resolves once `done(lines)` holds, checked whenever output arrives.
   * Rejects, with the script's stderr, if the process exits first.
   */
  waitFor(done: (lines: readonly string[]) => boolean): Promise<void>;
  /** Sends SIGKILL (unless it already exited) and resolves with how it ended. */
  kill(): Promise<ChildExit>;
}

/**
 * Starts `node <script's entry> ...args`, with stdout and stderr piped
 * (as the user and group `uid` and `gid` when given),
 * tied to the test (see tied-children.ts): it dies with the test's process,
 * and is killed after the test that started it.
 */
export function startScript(
  script: string,
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; uid?: number; gid?: number } = {},
): ChildScript {
  const child = spawnTied(process.execPath, [...childEntry(script, opts.cwd), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    ...(opts.env === undefined ? {} : { env: opts.env }),
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    ...(opts.uid === undefined ? {} : { uid: opts.uid }),
    ...(opts.gid === undefined ? {} : { gid: opts.gid }),
  });
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  let ended = false;
  const watchers = new Set<() => void>();
  const wake = () => {
    for (const w of [...watchers]) w();
  };
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
    wake();
  });
  // "close" comes after stdout ended, so every line is in by then.
  const exited = new Promise<ChildExit>((resolve) =>
    child.on("close", (code, signal) => {
      if (partial !== "") lines.push(partial);
      partial = "";
      ended = true;
      resolve({ code, signal });
      wake();
    }),
  );

  return {
    pid: child.pid!,
    lines,
    stderr: () => stderr,
    exited,
    waitFor(done) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (done(lines)) {
            watchers.delete(check);
            resolve();
          } else if (ended) {
            watchers.delete(check);
            reject(new Error(`${script} exited before the awaited output (${lines.length} lines); stderr: ${stderr}`));
          }
        };
        watchers.add(check);
        check();
      });
    },
    async kill() {
      if (!ended) child.kill("SIGKILL");
      return exited;
    },
  };
}

/**
 * Runs `script` `lives` times in a row, each life killed with SIGKILL a
 * random moment (under `maxDelayMs`) after its output first satisfies
 * `progressed`, or at once if it exits before that; a life that ends on its
 * own must exit with code 0. The first life is killed as soon as it shows
 * progress: on a quiet machine a whole run can end within `maxDelayMs` of
 * its first sign, and then no life would be killed mid-run at all. Returns
 * how many kills landed: a late life may find the work done and exit first.
 * Each life gets its seed from `rng`. Throws if a life reported a failure
 * of its background work (see background-errors.ts): killed or not, its
 * checkpoints must not fail.
 */
export async function killLives(
  script: string,
  args: readonly string[],
  opts: { lives: number; rng: TestRandom; maxDelayMs: number; progressed: (lines: readonly string[]) => boolean },
): Promise<number> {
  let kills = 0;
  for (let i = 0; i < opts.lives; i++) {
    const w = startScript(script, args, { env: opts.rng.childEnv() });
    const progressed = await w.waitFor(opts.progressed).then(
      () => true,
      () => false,
    );
    const wait = opts.rng.int(opts.maxDelayMs);
    if (progressed && i > 0) await delay(wait);
    const exit = await w.kill();
    const failures = backgroundFailures(w);
    if (failures.length > 0) throw new Error(`life ${i + 1} of ${script} reported background failures: ${failures.join(" | ")}`);
    if (exit.signal === "SIGKILL") kills++;
    else if (exit.code !== 0) throw new Error(`worker failed: ${w.stderr()}`);
  }
  return kills;
}
