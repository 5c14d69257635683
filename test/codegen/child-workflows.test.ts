/**
 * @module `starts:` and `waits_for_child:` in a spec: references to
 * workflows of the package or of another package generated with it, each
 * problem located at its line and column, and what the generated code
 * carries for the runtime.
 */
import { describe, expect, it } from "vitest";
import { generate } from "../../codegen/generate.js";
import type { Diagnostic } from "../../codegen/analyse/diagnostics.js";

const CHILD = `version: 1
package: docs
workflows:
  page.render:
    input: { type: object, required: [n], properties: { n: { type: integer } } }
    result: { type: object, required: [ok], properties: { ok: { type: boolean } } }
    steps:
      render: {}
`;

const PARENT = (steps: string) => `version: 1
package: batch
workflows:
  local.child:
    input: { type: object }
    result: { type: object }
    steps:
      only: {}
  run:
    input: { type: object }
    result: { type: object }
    steps:
${steps}`;

const OK = `      start:
        starts: [docs:page.render, local.child]
        next: [wait]
      wait:
        waits_for_child: docs:page.render
        next: [wait]
`;

function run(parent: string, withChild = true): readonly Diagnostic[] {
  return generate([{ file: "batch.taquba.yaml", source: parent }, ...(withChild ? [{ file: "docs.taquba.yaml", source: CHILD }] : [])]).diagnostics;
}
const at = (ds: readonly Diagnostic[]) => ds.map((d) => [d.code, d.file, d.line, d.column]);

describe("child workflows in a spec", () => {
  it("sound references generate the step's starts, its child wait and typed ctx.workflows", () => {
    const r = generate([
      { file: "batch.taquba.yaml", source: PARENT(OK) },
      { file: "docs.taquba.yaml", source: CHILD },
    ]);
    expect(r.diagnostics).toEqual([]);
    const defs = r.files.find((f) => f.path === "batch/definitions.ts")!.content;
    expect(defs).toContain(
      'starts: [{ path: ["docs", "pageRender"], workflow: "docs.page.render" }, { path: ["batch", "localChild"], workflow: "batch.local.child" }]',
    );
    expect(defs).toContain('child: "docs.page.render"');
    const wf = r.files.find((f) => f.path === "batch/workflows.ts")!.content;
    expect(wf).toContain('ChildWorkflow<typeof import("../docs/definitions.js").pageRenderWorkflow>');
    expect(wf).toContain("readonly localChild: ChildWorkflow<typeof localChildWorkflow>");
    expect(wf).toContain('ChildOutcomeOf<typeof import("../docs/definitions.js").pageRenderWorkflow>');
  });

  it("a workflow the package does not declare, pointed at the reference", () => {
    const ds = run(PARENT(OK.replace("local.child]", "local.missing]")));
    expect(at(ds)).toEqual([["UNKNOWN_WORKFLOW", "batch.taquba.yaml", 14, 36]]);
    expect(ds[0]!.message).toMatch(/names workflow "local.missing", which package "batch" does not declare; workflows: local.child, run/);
  });

  it("a package not generated with this one, and a workflow another package lacks", () => {
    expect(at(run(PARENT(OK), false))).toEqual([
      ["UNKNOWN_WORKFLOW", "batch.taquba.yaml", 14, 18],
      ["UNKNOWN_WORKFLOW", "batch.taquba.yaml", 17, 26],
    ]);
    const ds = run(PARENT(OK.replace("waits_for_child: docs:page.render", "waits_for_child: docs:page.paint")));
    expect(at(ds)).toEqual([["UNKNOWN_WORKFLOW", "batch.taquba.yaml", 17, 26]]);
    expect(ds[0]!.message).toMatch(/names "page.paint", which package "docs" does not declare; workflows: page.render/);
  });

  it("BAD_ENTRY_STEP: the entry step cannot wait for a child; BAD_CHILD_WAIT: a step that waits for a signal and a child", () => {
    expect(at(run(PARENT(OK.replace("        next: [wait]\n", "        waits_for_child: docs:page.render\n        next: [wait]\n"))))).toEqual([
      ["BAD_ENTRY_STEP", "batch.taquba.yaml", 15, 9],
    ]);
    const both = `version: 1\npackage: batch\nsignals:\n  go:\n    key: "go:{id}"\n    params: { id: { type: string } }\n    payload: { type: object }\n${PARENT(`${OK}        waits_for: go\n        timeout_ms: 1000\n`).split("\n").slice(2).join("\n")}`;
    expect(at(run(both)).map(([code]) => code)).toContain("BAD_CHILD_WAIT");
  });

  it("a child wait with a timeout: the waiting step's signal may be timed_out, and the definition carries the timeout", () => {
    const r = generate([
      { file: "batch.taquba.yaml", source: PARENT(`${OK}        timeout_ms: 1000\n`) },
      { file: "docs.taquba.yaml", source: CHILD },
    ]);
    expect(r.diagnostics).toEqual([]);
    expect(r.files.find((f) => f.path === "batch/definitions.ts")!.content).toMatch(/timeoutMs: 1000,\s+next: \["wait"\],\s+child: "docs.page.render"/);
    const wf = r.files.find((f) => f.path === "batch/workflows.ts")!.content;
    expect(wf).toContain('ChildOutcomeOrTimeoutOf<typeof import("../docs/definitions.js").pageRenderWorkflow>');
    expect(wf).not.toContain("ChildOutcomeOf<");
  });

  it("a malformed reference is a format error", () => {
    expect(at(run(PARENT(OK.replace("docs:page.render,", "Docs::x,"))))).toEqual([["SPEC_SCHEMA", "batch.taquba.yaml", 14, 18]]);
  });
});
