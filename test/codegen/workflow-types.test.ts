/**
 * Type tests of generated workflow code: typing/workflow-usage.ts compiles,
 * and with its `@ts-expect-error` directives removed every marked line (and
 * no other) fails to compile, so no directive hides a file that never
 * typechecks. Scaffolded workflow stubs compile against the generated code.
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
const work = mkdtempSync(join(tmpdir(), "taquba-wf-types-"));
writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));

afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Typechecks one file against the repository's settings; returns the lines (1-based) with errors in that file. */
function typecheck(source: string, name: string): Promise<number[]> {
  const file = join(work, `${name}.ts`);
  writeFileSync(file, source.replace(/from "\.\.\/\.\.\/\.\.\/generated\//g, `from "${join(root, "generated")}/`));
  const config = join(work, `${name}.tsconfig.json`);
  writeFileSync(
    config,
    JSON.stringify({ extends: join(root, "tsconfig.json"), compilerOptions: { typeRoots: [join(root, "node_modules", "@types")] }, include: [file] }),
  );
  return new Promise((resolve, reject) => {
    execFile(join(root, "node_modules", ".bin", "tsc"), ["--noEmit", "-p", config], { cwd: root }, (error, stdout) => {
      const lines = stdout
        .split("\n")
        .filter((l) => l.includes(`${name}.ts(`))
        .map((l) => Number(/\.ts\((\d+),/.exec(l)?.[1]));
      if (error !== null && stdout === "") reject(error);
      else resolve(lines);
    });
  });
}

describe("generated workflow types", () => {
  const source = readFileSync(join(here, "typing", "workflow-usage.ts"), "utf8");
  const lines = source.split("\n");
  const isDirective = (l: string) => l.trim().startsWith("// @ts-expect-error");
  const marked = lines.flatMap((l, i) => (isDirective(l) ? [i + 2] : []));

  it("correct use compiles, and a check that reports nothing can report something", async () => {
    expect(await typecheck(source, "wf-usage")).toEqual([]);
    expect(await typecheck(`${source}\nconst broken: number = "x";\n`, "wf-sanity")).toEqual([lines.length + 1]);
  }, 60_000);

  it("each marked misuse is a compile error on its own line, and nothing else is", async () => {
    expect(marked.length).toBeGreaterThanOrEqual(20);
    const stripped = lines.map((l) => (isDirective(l) ? "" : l)).join("\n");
    const errors = new Set(await typecheck(stripped, "wf-stripped"));
    expect(marked.filter((line) => !errors.has(line))).toEqual([]);
    expect([...errors].filter((line) => !marked.includes(line))).toEqual([]);
  }, 60_000);

  it("scaffolded workflow stubs compile against the generated code", async () => {
    const inputs = [{ file: "schemas/orders.taquba.yaml", source: readFileSync(join(root, "schemas", "orders.taquba.yaml"), "utf8") }];
    const stubs = scaffoldFiles(analyse(inputs).packages, "../generated");
    expect(stubs.map((f) => f.path)).toEqual(["orders/order-fulfil.workflow.ts"]);
    const stub = stubs[0]?.content ?? "";
    for (const method of ["reserve(", "awaitPayment(", "pack(", "ship("]) expect(stub).toContain(`async ${method}`);
    expect(await typecheck(stub.replace(/from "(?:\.\.\/)+generated\//, `from "../../../generated/`), "wf-stub")).toEqual([]);
  }, 60_000);
});
