/**
 * Diagnostics: one bad spec per code, asserting the code, line and column,
 * plus aggregation (every problem at once) and the code-frame renderer.
 */

import { describe, expect, it } from "vitest";
import { renderDiagnostic, type Diagnostic } from "../../codegen/analyse/diagnostics.js";
import { generate } from "../../codegen/generate.js";

function run(source: string, file = "spec.taquba.yaml"): readonly Diagnostic[] {
  const result = generate([{ file, source }]);
  if (result.diagnostics.some((d) => d.severity === "error")) expect(result.files).toEqual([]);
  return result.diagnostics;
}

function only(source: string): Diagnostic {
  const ds = run(source);
  expect(ds, JSON.stringify(ds, null, 2)).toHaveLength(1);
  return ds[0] as Diagnostic;
}

const JOB = `    input: { type: object, required: [id], properties: { id: { type: string } } }
    output: { type: object }`;

describe("diagnostics", () => {
  it("YAML_SYNTAX: a broken flow mapping", () => {
    const ds = run(`version: 1\npackage: p\njobs: { a: [1, 2 }\n`);
    expect(ds[0]).toMatchObject({ code: "YAML_SYNTAX", severity: "error", file: "spec.taquba.yaml", line: 3 });
    expect(ds.every((d) => d.code === "YAML_SYNTAX")).toBe(true);
  });

  it("DUPLICATE_KEY: a job declared twice", () => {
    const d = only(`version: 1\npackage: p\njobs:\n  a:\n${JOB}\n  a:\n${JOB}\n`);
    expect(d).toMatchObject({ code: "DUPLICATE_KEY", line: 7, column: 3 });
  });

  it("SPEC_SCHEMA: a misspelt key is pointed at, with the allowed keys", () => {
    const d = only(`version: 1\npackage: p\njobs:\n  a:\n${JOB}\n    max_atempts: 3\n`);
    expect(d).toMatchObject({ code: "SPEC_SCHEMA", line: 7, column: 5 });
    expect(d.message).toContain('unknown key "max_atempts"');
    expect(d.message).toContain("max_attempts");
  });

  it("SPEC_SCHEMA: a wrong value is pointed at", () => {
    const d = only(`version: 1\npackage: p\njobs:\n  a:\n${JOB}\n    max_attempts: 0\n`);
    expect(d).toMatchObject({ code: "SPEC_SCHEMA", line: 7, column: 19 });
  });

  it("SPEC_SCHEMA: an unsupported format", () => {
    const d = only(`version: 1\npackage: p\nheaders:\n  h: { type: string, format: ipv5 }\n`);
    expect(d).toMatchObject({ code: "SPEC_SCHEMA", line: 4, column: 30 });
    expect(d.message).toContain('"uuid"');
  });

  it("UNKNOWN_REF: a $ref to an undeclared type", () => {
    const d = only(
      `version: 1\npackage: p\ntypes:\n  Money: { type: integer }\njobs:\n  a:\n    input: { $ref: "#/types/Mony" }\n    output: { type: object }\n`,
    );
    expect(d).toMatchObject({ code: "UNKNOWN_REF", line: 7, column: 20 });
    expect(d.message).toContain("Money");
  });

  it("BAD_KEY_TEMPLATE: an idempotency key naming an unknown field", () => {
    const d = only(`version: 1\npackage: p\njobs:\n  a:\n${JOB}\n    idempotency_key: "k:{idd}"\n`);
    expect(d).toMatchObject({ code: "BAD_KEY_TEMPLATE", line: 7, column: 22 });
    expect(d.message).toContain('"idd" names no declared field');
  });

  it("BAD_KEY_TEMPLATE: an idempotency key over an optional or non-scalar field", () => {
    const ds = run(
      `version: 1\npackage: p\njobs:\n  a:\n    input: { type: object, required: [tags], properties: { tags: { type: array }, note: { type: string } } }\n    output: { type: object }\n    idempotency_key: "{tags}:{note}"\n`,
    );
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([
      ["BAD_KEY_TEMPLATE", 7, 22],
      ["BAD_KEY_TEMPLATE", 7, 22],
    ]);
    expect(ds.map((d) => d.message).join("\n")).toMatch(/"tags" is not a string[\s\S]*"note" is optional/);
  });

  it("BAD_KEY_TEMPLATE: a signal key naming an undeclared parameter, and an unused parameter", () => {
    const ds = run(
      `version: 1\npackage: p\nsignals:\n  s:\n    key: "s:{order}"\n    params:\n      order_id: { type: string }\n    payload: { type: object }\n`,
    );
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([
      ["BAD_KEY_TEMPLATE", 5, 10],
      ["BAD_KEY_TEMPLATE", 7, 7],
    ]);
  });

  it.each([
    ["s:{a}{b}", "nothing"],
    ["s:{a}x9%{b}", 'only "x9%"'],
  ])("BAD_KEY_TEMPLATE: signal key %s has no separator between parameters", (key, between) => {
    const d = only(
      `version: 1\npackage: p\nsignals:\n  s:\n    key: "${key}"\n    params:\n      a: { type: string }\n      b: { type: string }\n    payload: { type: object }\n`,
    );
    expect(d).toMatchObject({ code: "BAD_KEY_TEMPLATE", line: 5, column: 10 });
    expect(d.message).toContain(`{a} and {b} have ${between} between them`);
  });

  it("BAD_KEY_TEMPLATE: an idempotency key with adjacent fields", () => {
    const d = only(
      `version: 1\npackage: p\njobs:\n  a:\n    input: { type: object, required: [x, y], properties: { x: { type: string }, y: { type: string } } }\n    output: { type: object }\n    idempotency_key: "{x}{y}"\n`,
    );
    expect(d).toMatchObject({ code: "BAD_KEY_TEMPLATE", line: 7, column: 22 });
  });

  it("BAD_KEY_TEMPLATE: a field named like an inherited property is not declared", () => {
    const d = only(`version: 1\npackage: p\njobs:\n  a:\n${JOB}\n    idempotency_key: "k:{constructor}"\n`);
    expect(d.message).toContain('"constructor" names no declared field');
  });

  it("NAME_COLLISION: two jobs that camelCase to one identifier", () => {
    const d = only(`version: 1\npackage: p\njobs:\n  email.send:\n${JOB}\n  email_send:\n${JOB}\n`);
    expect(d).toMatchObject({ code: "NAME_COLLISION", line: 7, column: 3 });
    expect(d.message).toContain("EmailSendInput");
  });

  it("NAME_COLLISION: a shared type named like a generated one", () => {
    const d = only(`version: 1\npackage: p\ntypes:\n  Client: { type: string }\n`);
    expect(d).toMatchObject({ code: "NAME_COLLISION", line: 4, column: 3 });
  });

  it("DUPLICATE_PACKAGE: two files declaring one package", () => {
    const result = generate([
      { file: "a.taquba.yaml", source: "version: 1\npackage: p\n" },
      { file: "b.taquba.yaml", source: "version: 1\npackage: p\n" },
    ]);
    expect(result.files).toEqual([]);
    expect(result.diagnostics).toEqual([expect.objectContaining({ code: "DUPLICATE_PACKAGE", file: "b.taquba.yaml", line: 2, column: 10 })]);
  });

  const WORKFLOW = (steps: string) =>
    `version: 1\npackage: p\nsignals:\n  paid:\n    key: "paid:{id}"\n    params: { id: { type: string } }\n    payload: { type: object }\nworkflows:\n  order:\n    input: { type: object }\n    result: { type: object }\n    steps:\n      start: { next: [pay] }\n${steps}`;

  it("UNKNOWN_SIGNAL: a step waiting for an undeclared signal", () => {
    const ds = run(WORKFLOW(`      pay: { waits_for: payed, timeout_ms: 1000 }\n`));
    expect(ds.filter((d) => d.severity === "error")).toEqual([expect.objectContaining({ code: "UNKNOWN_SIGNAL", line: 14, column: 25 })]);
    expect(ds.find((d) => d.code === "UNKNOWN_SIGNAL")?.message).toContain("paid");
  });

  it("UNKNOWN_STEP and WAIT_WITHOUT_TIMEOUT", () => {
    const ds = run(WORKFLOW(`      pay: { waits_for: paid, next: [ship] }\n`)).filter((d) => d.severity === "error");
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([
      ["WAIT_WITHOUT_TIMEOUT", 14, 14],
      ["UNKNOWN_STEP", 14, 38],
    ]);
  });

  it("a format error does not hide the step graph's errors: both are reported at once", () => {
    const source = WORKFLOW(`      pay: { waits_for: paid, timeout_ms: 5, next: [ship] }\n`).replace(
      "    result: { type: object }",
      "    result: { type: object }\n    retries: 3",
    );
    const codes = run(source)
      .filter((d) => d.severity === "error")
      .map((d) => d.code);
    expect(codes).toContain("SPEC_SCHEMA");
    expect(codes).toContain("UNKNOWN_STEP");
  });

  it("UNREACHABLE_STEP: a step no transition from the entry leads to", () => {
    const ds = run(WORKFLOW(`      pay: { waits_for: paid, timeout_ms: 5 }\n      orphan: { next: [pay] }\n`));
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([["UNREACHABLE_STEP", 15, 7]]);
    expect(ds[0]?.message).toContain('"orphan"');
  });

  it("BAD_ENTRY_STEP: the entry step declares a payload or waits for a signal", () => {
    const source = WORKFLOW(`      pay: { waits_for: paid, timeout_ms: 5 }\n`).replace(
      "      start: { next: [pay] }",
      "      start: { payload: { type: string }, waits_for: paid, timeout_ms: 5, next: [pay] }",
    );
    expect(run(source).map((d) => [d.code, d.line, d.column])).toEqual([
      ["BAD_ENTRY_STEP", 13, 16],
      ["BAD_ENTRY_STEP", 13, 43],
    ]);
  });

  it("TIMEOUT_WITHOUT_WAIT: a timeout on a step that waits for nothing", () => {
    const ds = run(WORKFLOW(`      pay: { timeout_ms: 5 }\n`));
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([["TIMEOUT_WITHOUT_WAIT", 14, 14]]);
  });

  it("SPEC_SCHEMA: a workflow without input or result", () => {
    const source = WORKFLOW(`      pay: { waits_for: paid, timeout_ms: 5 }\n`).replace("    input: { type: object }\n", "");
    expect(only(source)).toMatchObject({ code: "SPEC_SCHEMA", line: 9, column: 3 });
  });

  it("NAME_COLLISION: a workflow and a job that share a client member", () => {
    const source = `${WORKFLOW(`      pay: { waits_for: paid, timeout_ms: 5 }\n`)}jobs:\n  order:\n${JOB}\n`;
    const ds = run(source);
    expect(ds.map((d) => d.code)).toContain("NAME_COLLISION");
    expect(ds.every((d) => d.code === "NAME_COLLISION")).toBe(true);
  });

  it("a sound workflow generates files with no diagnostic", () => {
    const result = generate([{ file: "w.taquba.yaml", source: WORKFLOW(`      pay: { waits_for: paid, timeout_ms: 5 }\n`) }]);
    expect(result.diagnostics).toEqual([]);
    expect(result.files.map((f) => f.path)).toContain("p/workflows.ts");
  });

  it("reports every problem of every file at once, sorted by file and position", () => {
    const result = generate([
      { file: "b.taquba.yaml", source: `version: 1\npackage: b\njobs:\n  a:\n${JOB}\n    priority: high\n    idempotency_key: "{nope}"\n` },
      { file: "a.taquba.yaml", source: `version: 2\npackage: a\n` },
    ]);
    expect(result.files).toEqual([]);
    expect(result.diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code}`)).toEqual([
      "a.taquba.yaml:1:10 SPEC_SCHEMA",
      "b.taquba.yaml:7:15 SPEC_SCHEMA",
    ]);
  });

  it("renders a code frame with a caret under the column", () => {
    const source = `version: 1\npackage: p\njobs:\n  a:\n${JOB}\n    max_attempts: 0\n`;
    const d = only(source);
    const text = renderDiagnostic(d, source);
    expect(text.split("\n")).toEqual([
      `spec.taquba.yaml:7:19: error SPEC_SCHEMA: ${d.message}`,
      "6 |     output: { type: object }",
      "7 |     max_attempts: 0",
      "  |                   ^",
    ]);
  });
});
