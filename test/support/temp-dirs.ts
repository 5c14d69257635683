/**
 * @module Temporary directories for tests over real files, removed after
 * each test of the file that asked for them, once the test's child
 * processes have been killed and have exited (a child still writing into a
 * directory being removed makes the removal fail with ENOTEMPTY, as after a
 * test that timed out while its children ran).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { killTestChildren } from "./tied-children.js";

/**
 * Registers cleanup in the calling test file and returns a function making
 * a fresh directory under the system temporary directory, named `prefix`
 * plus a random suffix. Call it at the top level of a test file.
 */
export function useTempDirs(prefix: string): () => Promise<string> {
  const dirs: string[] = [];
  afterEach(async () => {
    await killTestChildren();
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
