/**
 * @module A file system filled up to its last byte, for the tests of what
 * a store does when a write does not fit.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Fills the file system under `dir` with files of `bytes` each until one does not fit; returns their paths. */
export function fillDisk(dir: string, bytes: number): string[] {
  const files: string[] = [];
  for (let i = 0; ; i++) {
    const f = join(dir, `filler-${bytes}-${i}`);
    try {
      writeFileSync(f, new Uint8Array(bytes));
    } catch {
      rmSync(f, { force: true });
      return files;
    }
    files.push(f);
  }
}
