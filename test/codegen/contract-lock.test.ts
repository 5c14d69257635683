/**
 * Breaking-change classification between a committed contract lock and the
 * spec now: inputs are contravariant, outputs and errors covariant.
 */

import { describe, expect, it } from "vitest";
import { diffLocks, parseLock, renderChange, renderLock } from "../../codegen/contract/contract-lock.js";
import { generate } from "../../codegen/generate.js";

const BASE = {
  headers: `  tenant_id: { type: string }\n  trace: { type: string, optional: true }`,
  input: `{ type: object, required: [id], properties: { id: { type: string, maxLength: 10 }, kind: { enum: [a, b] }, note: { type: string } } }`,
  output: `{ type: object, required: [status], properties: { status: { enum: [done, skipped] }, detail: { type: string } } }`,
  key: `"s:{order}"`,
};

function spec(p: Partial<typeof BASE> = {}, extra = ""): string {
  const s = { ...BASE, ...p };
  return `version: 1
package: p
headers:
${s.headers}
signals:
  paid:
    key: ${s.key}
    params: { order: { type: string } }
    payload: { type: object, properties: { cents: { type: integer } } }
jobs:
  work:
    input: ${s.input}
    output: ${s.output}
${extra}`;
}

function changes(before: string, after: string): string[] {
  const lock = (source: string) => {
    const r = generate([{ file: "p.taquba.yaml", source }]);
    expect(r.diagnostics).toEqual([]);
    return r.locks[0]?.lock ?? expect.unreachable();
  };
  return diffLocks(lock(before), lock(after)).map(renderChange);
}

describe("contract lock", () => {
  it("is canonical and round-trips", () => {
    const r = generate([{ file: "p.taquba.yaml", source: spec() }]);
    const l = r.locks[0];
    expect(l?.file).toBe("p.taquba.lock.json");
    expect(parseLock(l?.content ?? "")).toEqual(JSON.parse(l?.content ?? ""));
    expect(renderLock(parseLock(l?.content ?? "") ?? expect.unreachable())).toBe(l?.content);
    expect(parseLock("{}")).toBeUndefined();
  });

  it("an unchanged or reformatted spec has no changes", () => {
    expect(changes(spec(), spec())).toEqual([]);
    expect(changes(spec(), spec().replace("version: 1", "# a comment\nversion: 1"))).toEqual([]);
  });

  it("inputs: narrowing breaks, widening does not", () => {
    expect(changes(spec(), spec({ input: BASE.input.replace("maxLength: 10", "maxLength: 5") }))).toEqual([
      'BREAKING: job "work" at input.id: "maxLength" changed from 10 to 5',
    ]);
    expect(changes(spec(), spec({ input: BASE.input.replace("maxLength: 10", "maxLength: 50") }))).toEqual([
      'compatible: job "work" at input.id: "maxLength" changed from 10 to 50',
    ]);
    expect(changes(spec(), spec({ input: BASE.input.replace("[a, b]", "[a, b, c]") }))).toEqual(['compatible: job "work" at input.kind: enum gained "c"']);
    expect(changes(spec(), spec({ input: BASE.input.replace("[a, b]", "[a]") }))).toEqual(['BREAKING: job "work" at input.kind: enum lost "b"']);
    expect(changes(spec(), spec({ input: BASE.input.replace("required: [id]", "required: [id, note]") }))).toEqual([
      'BREAKING: job "work" at input.note: became required',
    ]);
    expect(changes(spec(), spec({ input: BASE.input.replace("note: { type: string }", "note: { type: integer }") }))).toEqual([
      'BREAKING: job "work" at input.note: no longer admits string',
      'compatible: job "work" at input.note: now admits integer',
    ]);
  });

  it("outputs: removing or loosening what readers rely on breaks, adding does not", () => {
    expect(changes(spec(), spec({ output: BASE.output.replace("[done, skipped]", "[done, skipped, failed]") }))).toEqual([
      'BREAKING: job "work" at output.status: enum gained "failed"',
    ]);
    expect(changes(spec(), spec({ output: BASE.output.replace("required: [status]", "required: []") }))).toEqual([
      'BREAKING: job "work" at output.status: became optional',
    ]);
    expect(changes(spec(), spec({ output: BASE.output.replace(", detail: { type: string }", "") }))).toEqual([
      'BREAKING: job "work" at output.detail: field removed from what old readers expect',
    ]);
    expect(changes(spec(), spec({ output: BASE.output.replace("detail: { type: string }", "detail: { type: string }, extra: { type: string }") }))).toEqual([
      'compatible: job "work" at output.extra: new field',
    ]);
  });

  it("headers, keys, errors and entries", () => {
    expect(changes(spec(), spec({ headers: `${BASE.headers}\n  region: { type: string }` }))).toEqual([
      'BREAKING: job "work" at headers.region: new required header',
    ]);
    expect(changes(spec(), spec({ headers: BASE.headers.replace(", optional: true", "") }))).toEqual([
      'BREAKING: job "work" at headers.trace: became required',
    ]);
    expect(changes(spec(), spec({ key: `"paid:{order}"` }))).toEqual([
      'BREAKING: signal "paid" at key: changed from "s:{order}" to "paid:{order}"; keys built before and after no longer match',
    ]);
    expect(changes(spec(), spec({}, "    error: { type: object }\n"))).toEqual(['compatible: job "work" at error: error added']);
    expect(changes(spec(), spec({}, "  more:\n    input: { type: object }\n    output: { type: object }\n"))).toEqual(['compatible: job "more": new job']);
    expect(changes(spec({}, "  more:\n    input: { type: object }\n    output: { type: object }\n"), spec())).toEqual([
      'BREAKING: job "more": job removed; producers or waiters of it remain',
    ]);
  });

  it("changes inside combinators count as breaking", () => {
    const a = spec({ output: `{ oneOf: [{ type: string }, { type: integer }] }` });
    const b = spec({ output: `{ oneOf: [{ type: string }, { type: number }] }` });
    expect(changes(a, b)).toEqual(['BREAKING: job "work" at output: "oneOf" changed; the classifier cannot judge it, so it counts as breaking']);
  });
  describe("workflows", () => {
    const WF = (steps: string, result = "{ type: object, required: [ok], properties: { ok: { type: boolean } } }") =>
      `workflows:\n  flow:\n    input: { type: object, properties: { id: { type: string } } }\n    result: ${result}\n    steps:\n${steps}`;
    const STEPS = `      start: { next: [wait] }\n      wait: { payload: { type: object, required: [id], properties: { id: { type: string } } }, waits_for: paid, timeout_ms: 5, next: [done] }\n      done: {}\n`;
    const withFlow = (steps = STEPS, result?: string) => `${spec()}${WF(steps, result)}`;

    it("are locked only when a package declares them", () => {
      expect(generate([{ file: "p.taquba.yaml", source: spec() }]).locks[0]?.content).not.toContain("workflows");
      expect(JSON.parse(generate([{ file: "p.taquba.yaml", source: withFlow() }]).locks[0]?.content ?? "{}").workflows.flow.hash).toMatch(/^[0-9a-f]{16}$/);
      expect(changes(withFlow(), withFlow())).toEqual([]);
    });

    it("a removed workflow or step, a moved wait or a narrowed step payload breaks runs in flight", () => {
      expect(changes(withFlow(), spec())).toEqual(['BREAKING: workflow "flow": workflow removed; runs of it in flight remain']);
      expect(changes(spec(), withFlow())).toEqual(['compatible: workflow "flow": new workflow']);
      expect(changes(withFlow(), withFlow(STEPS.replace("next: [done] }", "}").replace("      done: {}\n", "")))).toEqual([
        'BREAKING: workflow "flow" at steps.done: step removed; runs in flight may be about to enter it',
      ]);
      expect(changes(withFlow(), withFlow(STEPS.replace(", waits_for: paid, timeout_ms: 5", "")))).toEqual([
        'BREAKING: workflow "flow" at steps.wait.waits_for: changed from "paid" to null; runs waiting now were keyed by the old signal',
      ]);
      expect(changes(withFlow(), withFlow(STEPS.replace("id: { type: string } } }, waits_for", "id: { type: string, minLength: 3 } } }, waits_for")))).toEqual([
        'BREAKING: workflow "flow" at steps.wait.payload.id: "minLength" added (3)',
      ]);
      expect(changes(withFlow(), withFlow(`${STEPS}      later: {}\n`.replace("next: [done] }", "next: [done, later] }")))).toEqual([
        'compatible: workflow "flow" at steps.later: new step',
      ]);
      expect(changes(withFlow(), withFlow(STEPS, "{ type: object, required: [], properties: { ok: { type: boolean } } }"))).toEqual([
        'BREAKING: workflow "flow" at result.ok: became optional',
      ]);
    });
  });
});
