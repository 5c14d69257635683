/**
 * @module Hostile text in a spec never becomes code: descriptions, property
 * names, enum values, defaults, key template literals and the spec's own
 * path full of newlines, comment ends, backticks, `${`, quotes and U+2028
 * generate files whose token stream (comments dropped, names and literals
 * reduced to their class) equals the one generated from harmless text.
 */
import fc from "fast-check";
import { ts } from "ts-morph";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { generate } from "../../codegen/generate.js";
import { HEAVY_TEST_MS } from "../support/load.js";

/** Fragments an attacker strings together. */
const HOSTILE = [
  "\n",
  "\r",
  "\u2028",
  "\u2029",
  "*/",
  "/*",
  "//",
  "`",
  "${",
  "}",
  '"',
  "'",
  "\\",
  "\u0000",
  "\u001b",
  ";process.exit(7);",
  "<!--",
  "-->",
  "#!",
  "\t",
  "é",
  "</script>",
];
const hostileText = fc.array(fc.constantFrom(...HOSTILE), { minLength: 1, maxLength: 6 }).map((parts) => `x${parts.join("")}`);

/** Slots filled with hostile or harmless text. */
const SLOTS = 14;

function spec(t: (i: number) => string): string {
  return stringify({
    version: 1,
    package: "p",
    description: t(0),
    types: {
      Thing: {
        type: "object",
        description: t(1),
        required: ["id"],
        properties: {
          id: { type: "string", description: t(2) },
          [t(3)]: { type: "string", enum: [t(4), "plain"], default: t(5), description: t(6) },
          fixed: { const: t(7) },
        },
      },
    },
    signals: { sig: { description: t(8), key: `k${t(9).replace(/[{}]/g, "")}:{id}`, params: { id: { type: "string" } }, payload: { type: "object" } } },
    jobs: {
      job: {
        description: t(10),
        input: { $ref: "#/types/Thing" },
        output: { type: "object", properties: { n: { type: "number", default: 1, description: t(11) } } },
        idempotency_key: `j${t(12).replace(/[{}]/g, "")}:{id}`,
      },
    },
    workflows: {
      flow: {
        description: t(13),
        input: { $ref: "#/types/Thing" },
        result: { type: "object" },
        steps: { first: { description: t(6), next: ["second"] }, second: { description: t(1), next: [] } },
      },
    },
  });
}

const NAME_LIKE = new Set([ts.SyntaxKind.Identifier, ts.SyntaxKind.StringLiteral, ts.SyntaxKind.NoSubstitutionTemplateLiteral]);

/** The file's tokens with comments dropped and names and plain literals reduced to "name". */
function shape(text: string, file: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const problems = (source as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics;
  expect(
    problems.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n")),
    file,
  ).toEqual([]);
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
  const out: string[] = [];
  for (let k = scanner.scan(); k !== ts.SyntaxKind.EndOfFileToken; k = scanner.scan()) {
    // Regex literals scan as a slash first; rescanning keeps the token stream aligned.
    if (k === ts.SyntaxKind.SlashToken || k === ts.SyntaxKind.SlashEqualsToken) {
      const prev = out[out.length - 1];
      if (prev === undefined || ["=", "(", ",", ":", "[", "!", "&", "|", "?", "{", "}", ";", "return"].includes(prev)) k = scanner.reScanSlashToken();
    }
    out.push(NAME_LIKE.has(k) ? "name" : k === ts.SyntaxKind.RegularExpressionLiteral ? "regex" : (ts.tokenToString(k) ?? ts.SyntaxKind[k]!));
  }
  return out;
}

function outputs(texts: string[], path: string): Map<string, string> {
  const result = generate([{ file: path, source: spec((i) => texts[i]!) }]);
  expect(
    result.diagnostics.filter((d) => d.severity === "error"),
    path,
  ).toEqual([]);
  const files = new Map(result.files.map((f) => [f.path, f.content]));
  for (const l of result.locks) files.set(l.file, l.content);
  return files;
}

describe("hostile spec text", () => {
  // 25 whole generations in this process: about 2 s of CPU, 7 s of wall time at a load of 15 on two cores.
  it("generates the same declarations as harmless text, and nothing that runs", { timeout: HEAVY_TEST_MS }, () => {
    const harmless = outputs(
      Array.from({ length: SLOTS }, (_, i) => `safe ${i}`),
      "specs/p.taquba.yaml",
    );
    const expected = new Map(
      [...harmless].map(([p, c]) => [p, p.endsWith(".json") ? JSON.stringify(Object.keys(JSON.parse(c) as object)) : shape(c, p).join(" ")]),
    );
    fc.assert(
      fc.property(fc.array(hostileText, { minLength: SLOTS, maxLength: SLOTS }), hostileText, (texts, dir) => {
        const files = outputs(texts, `specs/${dir.replace(/\//g, "_")}/p.taquba.yaml`);
        expect([...files.keys()].map((p) => p.replace(/^specs\/[\s\S]*\/p\./, "specs/p."))).toEqual([...expected.keys()]);
        for (const [p, c] of files) {
          const key = p.replace(/^specs\/[\s\S]*\/p\./, "specs/p.");
          if (p.endsWith(".json")) expect(JSON.stringify(Object.keys(JSON.parse(c) as object)), p).toBe(expected.get(key));
          else expect(shape(c, p).join(" "), p).toBe(expected.get(key));
        }
      }),
      { numRuns: 25 },
    );
  });

  it("a newline and code in the spec's directory name stays inside the header comment", () => {
    const path = "specs/x\nglobalThis.injected = 1;//\u2028globalThis.injected = 2;/p.taquba.yaml";
    const files = outputs(
      Array.from({ length: SLOTS }, (_, i) => `safe ${i}`),
      path,
    );
    const types = files.get("p/types.ts")!;
    const firstLine = types.split("\n")[0]!;
    expect(firstLine).toContain("generated by taquba codegen");
    expect(types.split(/\r\n|[\n\r\u2028\u2029]/)[1]).not.toContain("injected");
    // Transpiled, the module keeps no trace of the path outside comments.
    const js = ts.transpileModule(types, { compilerOptions: { module: ts.ModuleKind.ESNext, removeComments: true } }).outputText;
    expect(js).not.toContain("injected");
  });
});
