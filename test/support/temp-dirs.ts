/**
 * @module Temporary directories for tests over real files, removed after
 * each test of the file that asked for them, once the test's child
 * processes have been killed and have exited (a child still writing into a
 * directory being removed makes the removal fail with ENOTEMPTY, as after a
 * test that timed out while its children ran).
 *
 * A removal that fails the way a writer finishing its last call makes it
 * fail (a file made after the removal listed its directory, a file still
 * held) is tried again a few times, a little later each time. One that
 * still fails then fails the test, naming the directory: something the test
 * left running writes into it, and a retry without end would hide that.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach } from "vitest";
import { killTestChildren } from "./tied-children.js";

/** Errors a removal meets while something finishes writing into the tree (EPERM: a file still open, on Windows). */
const RETRIED = new Set(["ENOTEMPTY", "EBUSY", "EPERM"]);

export interface RemovalOptions {
  /** Attempts in all (default 6). */
  attempts?: number;
  /** The pause before the second attempt, doubled before each next one (default 10 ms: 310 ms of pauses over six attempts). */
  firstPauseMs?: number;
  /** Called after each failed attempt that will be tried again, with its error code. */
  afterFailure?: (code: string, attempt: number) => void | Promise<void>;
}

/**
 * Removes `dir` and all it holds (nothing when it is gone), trying again on
 * the errors of a writer still finishing (see the module comment) up to
 * `attempts` times; then, or on any other error, throws an error naming the
 * directory and what was left running.
 */
export async function removeTempDir(dir: string, opts: RemovalOptions = {}): Promise<void> {
  const { attempts = 6, firstPauseMs = 10, afterFailure } = opts;
  for (let attempt = 1; ; attempt++) {
    try {
      await rm(dir, { recursive: true, force: true });
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "";
      if (!RETRIED.has(code) || attempt >= attempts) {
        throw new Error(
          `could not remove the test directory ${dir} (${code || String(err)}, ${attempt} attempt${attempt === 1 ? "" : "s"}): ` +
            "something the test left running may still write into it; close its stores and stop its workers before it ends",
          { cause: err },
        );
      }
      await afterFailure?.(code, attempt);
      await sleep(firstPauseMs * 2 ** (attempt - 1));
    }
  }
}

/**
 * Registers cleanup in the calling test file and returns a function making
 * a fresh directory under the system temporary directory, named `prefix`
 * plus a random suffix. Call it at the top level of a test file.
 */
export function useTempDirs(prefix: string): () => Promise<string> {
  const dirs: string[] = [];
  afterEach(async () => {
    await killTestChildren();
    // Every directory is tried, then the first failure fails the test.
    const removals = await Promise.allSettled(dirs.splice(0).map((d) => removeTempDir(d)));
    for (const r of removals) if (r.status === "rejected") throw r.reason;
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
