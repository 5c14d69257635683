/**
 * @module Typechecking a piece of source against the repository's settings
 * in a separate `tsc` run, for the type tests of generated code: each run
 * reports the lines with errors, so a test can assert that a misuse fails
 * exactly where it is marked.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";

/** The repository root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * Registers cleanup in the calling test file and returns a function that
 * typechecks `source` as `<name>.ts` and resolves with the 1-based lines of
 * the errors in that file. Imports of `../../../generated/` (as written in
 * `typing/*.ts`) are pointed at the real generated folder. Call it at the top
 * level of a test file.
 */
export function useTypecheck(prefix: string): (source: string, name: string) => Promise<number[]> {
  const work = mkdtempSync(join(tmpdir(), prefix));
  // The copies are ES modules, like the repository's own files.
  writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  return (source, name) => {
    const file = join(work, `${name}.ts`);
    writeFileSync(file, source.replace(/from "\.\.\/\.\.\/\.\.\/generated\//g, `from "${join(root, "generated")}/`));
    const config = join(work, `${name}.tsconfig.json`);
    writeFileSync(
      config,
      JSON.stringify({ extends: join(root, "tsconfig.json"), compilerOptions: { typeRoots: [join(root, "node_modules", "@types")] }, include: [file] }),
    );
    return new Promise((resolve, reject) => {
      execFile(
        join(root, "node_modules", ".bin", "tsc"),
        ["--noEmit", "-p", config],
        { cwd: root, timeout: 300_000, killSignal: "SIGKILL" },
        (error, stdout) => {
          // Other parts of the tree may be mid-edit; only this file's errors count.
          const lines = stdout
            .split("\n")
            .filter((l) => l.includes(`${name}.ts(`))
            .map((l) => Number(/\.ts\((\d+),/.exec(l)?.[1]));
          if (error !== null && stdout === "") reject(error);
          else resolve(lines);
        },
      );
    });
  };
}

/** A usage file's `@ts-expect-error` directives: the lines they mark, and the source with them blanked. */
export interface Directives {
  /** The 1-based lines each directive marks (the line after it). */
  readonly marked: readonly number[];
  /** The source with every directive line blanked in place, so line numbers stay put. */
  readonly stripped: string;
}

/** Finds the `// @ts-expect-error` directives of `source`. */
export function expectErrorDirectives(source: string): Directives {
  const lines = source.split("\n");
  const isDirective = (l: string) => l.trim().startsWith("// @ts-expect-error");
  return {
    marked: lines.flatMap((l, i) => (isDirective(l) ? [i + 2] : [])),
    stripped: lines.map((l) => (isDirective(l) ? "" : l)).join("\n"),
  };
}
