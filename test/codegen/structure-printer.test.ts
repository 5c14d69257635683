/**
 * @module The fast structure printer against ts-morph, its reference: every
 * fixture and project spec prints to the same bytes both ways, statements
 * the fast path cannot vouch for fall back to ts-morph (and still print the
 * same), and a generation pass over the project's specs never loads ts-morph.
 */

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { StatementStructures } from "ts-morph";
import { describe, expect, it } from "vitest";
import { generate, type SpecInput } from "../../codegen/generate.js";
import { singleStatement } from "../../codegen/print/single-statement.js";
import { STRUCTURE_KIND } from "../../codegen/print/structure-kind.js";
import { printStatements } from "../../codegen/print/structure-printer.js";
import { Imports, loadTsMorph, printFile, printFileWithTsMorph, withTsMorphPrinter } from "../../codegen/print/ts-file.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");

function specsIn(dir: string): SpecInput[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".taquba.yaml"))
    .map((f) => ({ file: relative(root, join(dir, f)).split("\\").join("/"), source: readFileSync(join(dir, f), "utf8") }));
}

const fixtures = join(here, "fixtures");
const specSets: Array<[string, SpecInput[]]> = [
  ...readdirSync(fixtures).map((name): [string, SpecInput[]] => [`fixture ${name}`, specsIn(join(fixtures, name))]),
  ["schemas/", specsIn(join(root, "schemas"))],
];

// The first comparison loads ts-morph into this process (1.1 s of CPU, 11 s of wall time at load 22 on two
// cores) and the last test generates in a child process through tsx (18 s there): the limit guards against
// a hang.
describe("fast structure printer", { timeout: HEAVY_TEST_MS }, () => {
  it.each(specSets)("%s: prints every file exactly as ts-morph does", (_name, inputs) => {
    const fast = generate(inputs);
    const reference = withTsMorphPrinter(() => generate(inputs));
    expect(fast.diagnostics).toEqual([]);
    expect(fast.files.map((f) => f.path)).toEqual(reference.files.map((f) => f.path));
    for (const [i, f] of fast.files.entries()) expect(f.content, f.path).toBe(reference.files[i]?.content);
  });

  it("matches ts-morph on structures with type parameters, optional and rest parameters, extends and empty bodies", () => {
    const imports = new Imports().value("m", "b", "a", "c as d").type("m", "T").namespace("./ns.js", "ns");
    const statements: Array<string | StatementStructures> = [
      {
        kind: STRUCTURE_KIND.TypeAlias,
        name: "A",
        isExported: true,
        typeParameters: [{ name: "T", constraint: "object", default: "{}" }, "U"],
        type: "T | U",
      } as StatementStructures,
      { kind: STRUCTURE_KIND.Interface, name: "Empty", isExported: true, docs: ["Nothing."] } as StatementStructures,
      {
        kind: STRUCTURE_KIND.Interface,
        name: "I",
        extends: ["X", "Y<Z>"],
        docs: ["First line.\n\nSecond paragraph."],
        properties: [{ name: "a", isReadonly: true, hasQuestionToken: true, type: "string" }, { name: "b" }],
        methods: [
          {
            name: "m",
            docs: ["Does m."],
            parameters: [
              { name: "x", hasQuestionToken: true },
              { name: "rest", isRestParameter: true, type: "number[]" },
            ],
          },
        ],
      } as StatementStructures,
      "/** Text. */\nexport const x = {\n  a: 1,\n} as const;",
      {
        kind: STRUCTURE_KIND.Function,
        name: "f",
        isExported: true,
        isAsync: true,
        typeParameters: [{ name: "B", constraint: "R" }],
        parameters: [{ name: "b", type: "B" }],
        returnType: "Promise<B>",
        statements: "const y = 'it\\'s';\nif (y) {\n  return b;\n}\nreturn b;",
      } as StatementStructures,
      { kind: STRUCTURE_KIND.Function, name: "g", statements: ["const a = 1;", "return a;"] } as StatementStructures,
    ];
    // Every one of these is in the supported subset: the fast path prints it, one
    // text per statement, each exactly as it appears in ts-morph's file.
    const printed = printStatements(imports.structures(), statements);
    expect(printed).not.toBeUndefined();
    expect(printed!.statements).toHaveLength(statements.length);
    const viaTsMorph = printFileWithTsMorph("s.yaml", imports, statements);
    expect(viaTsMorph).toContain(printed!.imports);
    for (const s of printed!.statements) expect(viaTsMorph).toContain(s);
    expect(printFile("s.yaml", imports, statements)).toBe(viaTsMorph);
  });

  it("falls back to ts-morph, with the same output, for statements it cannot vouch for", () => {
    const cases: Array<Array<string | StatementStructures>> = [
      ["export const a = 1;\nexport const b = 2;"],
      ["// a line comment\nexport const a = 1;"],
      ["export type A = string\nexport type B = number"],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, printed as code
      ["export const t = `x${1}`;"],
      ["export const a = 1; // trailing"],
      [{ kind: STRUCTURE_KIND.Enum, name: "E", members: [{ name: "A" }] } as StatementStructures],
      [{ kind: STRUCTURE_KIND.TypeAlias, name: "A", type: "B", leadingTrivia: "// hi" } as StatementStructures],
    ];
    for (const statements of cases) {
      expect(printStatements([], statements)).toBeUndefined();
      expect(printFile("s.yaml", new Imports(), statements)).toBe(printFileWithTsMorph("s.yaml", new Imports(), statements));
    }
  });

  it("numbers structure kinds as the installed ts-morph does, and emitters get that numbering", async () => {
    const { StructureKind } = (await import("ts-morph")) as { StructureKind: Record<string, string | number> };
    const installed = Object.fromEntries(Object.entries(StructureKind).filter(([, v]) => typeof v === "number"));
    expect({ ...STRUCTURE_KIND }).toEqual(installed);
    expect(loadTsMorph().StructureKind).toBe(STRUCTURE_KIND);
  });

  it("recognises single statements conservatively", () => {
    for (const ok of [
      "export type A = B;",
      "/** Doc. */\nexport interface A {\n  // inside\n  a: string;\n}",
      "export type A =\n  | B\n  | C;",
      'export type J = JobDefinition<\n  "a",\n  B\n>;',
      'export const s = "a;b\\"c";',
      "export const o = {\n  a: 1,\n} as const;",
    ]) {
      expect(singleStatement(ok), ok).toBe(true);
    }
    for (const bad of [
      "",
      "/* block */ export type A = B;",
      "export type A = B; export type C = D;",
      "export interface A {} export interface B {}",
      "export type A = { a: 1 } export type B = 2;",
      "export const a = b\nexport const c = d;",
      "export const r = /x/;",
      'export const s = "unterminated;',
      "export const a = (1;",
    ]) {
      expect(singleStatement(bad), bad).toBe(false);
    }
  });

  it("generates the project's specs without loading ts-morph", () => {
    const script = [
      `import { createRequire } from "node:module";`,
      `import { readdirSync, readFileSync } from "node:fs";`,
      `const { generate } = await import(${JSON.stringify(join(root, "codegen", "generate.ts"))});`,
      `const dir = ${JSON.stringify(join(root, "schemas"))};`,
      `const inputs = readdirSync(dir).filter((f) => f.endsWith(".taquba.yaml")).map((f) => ({ file: f, source: readFileSync(dir + "/" + f, "utf8") }));`,
      `const r = generate(inputs);`,
      `const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => /ts-morph[\\\\/]dist|typescript\\.js$/.test(k));`,
      `console.log(JSON.stringify({ files: r.files.length, loaded }));`,
    ].join("\n");
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
      killSignal: "SIGKILL",
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { files: number; loaded: string[] };
    expect(out.files).toBeGreaterThan(0);
    expect(out.loaded).toEqual([]);
  });
});
