/**
 * @module A real small file system for tests of a full disk: a tmpfs of
 * `size` mounted on a fresh directory, when the tests run as root on Linux
 * (elsewhere undefined, and the tests that need it are skipped).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh directory with a tmpfs of `size` (a mount option such as "256k") on it, or undefined when this process may not mount one. */
export function smallFileSystem(size: string): string | undefined {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "taquba-full-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "ignore" });
    return dir;
  } catch {
    rmdirSync(dir);
    return undefined;
  }
}

/** Unmounts and removes a directory `smallFileSystem` made. */
export function removeSmallFileSystem(dir: string | undefined): void {
  if (dir === undefined) return;
  execFileSync("umount", ["-l", dir], { stdio: "ignore" });
  rmdirSync(dir);
}
