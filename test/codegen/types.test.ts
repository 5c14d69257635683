/**
 * Type tests of generated code: typing/generated-usage.ts compiles, and with
 * its `@ts-expect-error` directives removed every marked line fails to
 * compile (so the directives are not hiding a file that never typechecks).
 */

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { analyse } from "../../codegen/generate.js";
import { scaffoldFiles } from "../../codegen/scaffold.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const usage = join(here, "typing", "generated-usage.ts");
const work = mkdtempSync(join(tmpdir(), "taquba-types-"));
// The copies are ES modules, like the repository's own files.
writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Typechecks one file against the repository's settings; returns the lines (1-based) with errors in that file. */
function typecheck(source: string, name: string): Promise<number[]> {
  const file = join(work, `${name}.ts`);
  // Absolute imports keep the copy pointing at the real generated code.
  writeFileSync(file, source.replace(/from "\.\.\/\.\.\/\.\.\/generated\//g, `from "${join(root, "generated")}/`));
  const config = join(work, `${name}.tsconfig.json`);
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, "tsconfig.json"),
      compilerOptions: { typeRoots: [join(root, "node_modules", "@types")] },
      include: [file],
    }),
  );
  return new Promise((resolve, reject) => {
    execFile(join(root, "node_modules", ".bin", "tsc"), ["--noEmit", "-p", config], { cwd: root }, (error, stdout) => {
      // Other parts of the tree may be mid-edit; only this file's errors count.
      const lines = stdout
        .split("\n")
        .filter((l) => l.includes(`${name}.ts(`))
        .map((l) => Number(/\.ts\((\d+),/.exec(l)?.[1]));
      if (error !== null && stdout === "") reject(error);
      else resolve(lines);
    });
  });
}

describe("generated types", () => {
  const source = readFileSync(usage, "utf8");
  const lines = source.split("\n");
  const isDirective = (l: string) => l.trim().startsWith("// @ts-expect-error");
  const marked = lines.flatMap((l, i) => (isDirective(l) ? [i + 2] : []));

  it("correct use compiles and every misuse directive is needed", async () => {
    expect(await typecheck(source, "usage")).toEqual([]);
    // A check that reports nothing must be able to report something.
    expect(await typecheck(`${source}\nconst broken: number = "x";\n`, "sanity")).toEqual([lines.length + 1]);
  });

  it("each marked misuse is a compile error on its own line", async () => {
    expect(marked.length).toBeGreaterThanOrEqual(15);
    // Blank the directives in place so line numbers stay put.
    const stripped = lines.map((l) => (isDirective(l) ? "" : l)).join("\n");
    const errors = new Set(await typecheck(stripped, "stripped"));
    expect(marked.filter((line) => !errors.has(line))).toEqual([]);
    expect([...errors].filter((line) => !marked.includes(line))).toEqual([]);
  });

  it("scaffolded handler stubs compile against the generated code", async () => {
    const inputs = ["billing", "media"].map((p) => ({
      file: `schemas/${p}.taquba.yaml`,
      source: readFileSync(join(root, "schemas", `${p}.taquba.yaml`), "utf8"),
    }));
    const stubs = scaffoldFiles(analyse(inputs).packages, "../generated");
    expect(stubs.map((f) => f.path)).toEqual(["billing/email-send.ts", "billing/invoice-render.ts", "media/image-scan.ts", "media/image-thumbnail.ts"]);
    // One program holding every stub, each import pointed at the real generated folder.
    const program = stubs
      .map((f, i) =>
        f.content
          .replace(/from "(?:\.\.\/)+generated\//, `from "../../../generated/`)
          .replace(/@module[^\n]*\n/, "\n")
          .replace(/import \{ (\w+) \}/, `import { $1 as pkg${i} }`)
          .replace(/\b(billing|media)\./g, `pkg${i}.`)
          .replace(/export class (\w+)/, `export class Stub${i}$1`),
      )
      .join("\n");
    expect(await typecheck(program, "stubs")).toEqual([]);
  });
});
