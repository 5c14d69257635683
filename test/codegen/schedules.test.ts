/**
 * @module `schedules:` in a spec: each problem located at its line and
 * column, and the generated definition a runtime can upsert.
 */
import { describe, expect, it } from "vitest";
import { generate } from "../../codegen/generate.js";
import type { Diagnostic } from "../../codegen/analyse/diagnostics.js";

const SPEC = (schedule: string) => `version: 1
package: p
headers:
  tenant_id: { type: string }
jobs:
  report.build:
    input: { type: object, required: [region], properties: { region: { type: string, enum: [eu, us] } } }
    output: { type: object }
schedules:
  nightly:
${schedule}`;

const OK = `    cron: "30 2 * * *"
    timezone: Europe/Berlin
    job: report.build
    input: { region: eu }
    headers: { tenant_id: acme }
`;

function run(source: string): readonly Diagnostic[] {
  return generate([{ file: "spec.taquba.yaml", source }]).diagnostics;
}
const at = (ds: readonly Diagnostic[]) => ds.map((d) => [d.code, d.line, d.column]);

describe("schedules in a spec", () => {
  it("a sound schedule generates a definition and a schedules record", () => {
    const r = generate([
      { file: "spec.taquba.yaml", source: SPEC(`${OK}    overlap: buffer_one\n    catch_up: { all_within_ms: 86400000 }\n    jitter_ms: 5000\n`) },
    ]);
    expect(r.diagnostics).toEqual([]);
    const defs = r.files.find((f) => f.path.endsWith("definitions.ts"))!.content;
    expect(defs).toContain("export const nightlySchedule: ScheduleDefinition = defineSchedule({");
    expect(defs).toContain("target: reportBuildJob,");
    expect(defs).toContain('overlap: "buffer_one",');
    expect(defs).toContain("catchUp: { allWithinMs: 86400000 },");
    expect(defs).toContain("jitterMs: 5000,");
    expect(defs).toMatch(/export const schedules = \{\n {2}nightly: nightlySchedule,\n\} as const;/);
  });

  it("BAD_CRON: a field out of range, pointed at the expression", () => {
    const ds = run(SPEC(OK.replace('"30 2 * * *"', '"30 25 * * *"')));
    expect(at(ds)).toEqual([["BAD_CRON", 11, 11]]);
    expect(ds[0]!.message).toContain("hour");
  });

  it("BAD_CRON: an unknown timezone, pointed at the timezone", () => {
    expect(at(run(SPEC(OK.replace("Europe/Berlin", "Europe/Atlantis"))))).toEqual([["BAD_CRON", 12, 15]]);
  });

  it("UNKNOWN_TARGET: a job the package does not declare", () => {
    const ds = run(SPEC(OK.replace("job: report.build", "job: report.bild")));
    expect(at(ds)).toEqual([["UNKNOWN_TARGET", 13, 10]]);
    expect(ds[0]!.message).toContain("report.build");
  });

  it("BAD_SCHEDULE: no target, or both a job and a workflow", () => {
    expect(at(run(SPEC(OK.replace("    job: report.build\n", ""))))).toEqual([["BAD_SCHEDULE", 10, 3]]);
    expect(at(run(SPEC(OK.replace("    job: report.build\n", "    job: report.build\n    workflow: x\n"))))).toEqual([["BAD_SCHEDULE", 13, 5]]);
  });

  it("BAD_SCHEDULE: an input the target's input schema refuses, pointed at the field", () => {
    const ds = run(SPEC(OK.replace("{ region: eu }", "{ region: mars }")));
    expect(at(ds)).toEqual([["BAD_SCHEDULE", 14, 22]]);
    expect(ds[0]!.message).toContain("input.region");
  });

  it("BAD_SCHEDULE: an undeclared header, and a missing required one", () => {
    expect(at(run(SPEC(OK.replace("{ tenant_id: acme }", "{ tenant_id: acme, region: eu }"))))).toEqual([["BAD_SCHEDULE", 15, 33]]);
    expect(at(run(SPEC(OK.replace("    headers: { tenant_id: acme }\n", ""))))).toEqual([["BAD_SCHEDULE", 10, 3]]);
  });

  it("BAD_SCHEDULE: jitter_ms on a schedule whose target is debounced, pointed at the jitter", () => {
    const debounced = SPEC(`${OK}    jitter_ms: 5000\n`).replace(
      "    output: { type: object }\n",
      '    output: { type: object }\n    debounce: { period_ms: 60000, key: "{region}" }\n',
    );
    const ds = run(debounced);
    expect(at(ds)).toEqual([["BAD_SCHEDULE", 17, 16]]);
    expect(ds[0]!.message).toContain("debounced");
    // Without jitter the same spec is sound.
    expect(run(debounced.replace("    jitter_ms: 5000\n", ""))).toEqual([]);
  });

  it("input_from: handler generates a typed input handler and schedulesWith, without a fixed input", () => {
    const r = generate([{ file: "spec.taquba.yaml", source: SPEC(OK.replace("    input: { region: eu }\n", "    input_from: handler\n")) }]);
    expect(r.diagnostics).toEqual([]);
    const defs = r.files.find((f) => f.path.endsWith("definitions.ts"))!.content;
    expect(defs).toContain('  inputFrom: "handler",');
    expect(defs).not.toMatch(/^ {2}input: (?!createValidator)/m);
    expect(defs).toContain("export type NightlyScheduleInputHandler = TypedScheduleInputHandler<ReportBuildInput>;");
    expect(defs).toMatch(/export interface ScheduleInputHandlers \{\n {2}readonly nightly: NightlyScheduleInputHandler;\n\}/);
    expect(defs).toContain("nightly: bindScheduleInput(nightlySchedule, inputs.nightly),");
  });

  it("BAD_SCHEDULE: both a fixed input and input_from, pointed at input_from", () => {
    const ds = run(SPEC(`${OK}    input_from: handler\n`));
    expect(at(ds)).toEqual([["BAD_SCHEDULE", 16, 5]]);
    expect(ds[0]!.message).toContain('schedule "nightly" gives both a fixed input and input_from: handler');
  });

  it("BAD_SCHEDULE: neither an input nor input_from when the target requires an input; none needed when it takes null", () => {
    const ds = run(SPEC(OK.replace("    input: { region: eu }\n", "")));
    expect(at(ds)).toEqual([["BAD_SCHEDULE", 10, 3]]);
    expect(ds[0]!.message).toContain('job "report.build" requires one; add "input: ..." or "input_from: handler"');
    const nullInput = SPEC(OK.replace("    input: { region: eu }\n", "")).replace(
      "input: { type: object, required: [region], properties: { region: { type: string, enum: [eu, us] } } }",
      'input: { type: "null" }',
    );
    expect(run(nullInput)).toEqual([]);
  });

  it("SPEC_SCHEMA: an input_from the format does not know", () => {
    const ds = run(SPEC(OK.replace("    input: { region: eu }\n", "    input_from: cron\n")));
    expect(at(ds)).toEqual([["SPEC_SCHEMA", 14, 17]]);
  });

  it("SPEC_SCHEMA: a policy the format does not know, and an absurd jitter", () => {
    const ds = run(SPEC(`${OK}    overlap: queue\n    jitter_ms: 1e30\n`));
    expect(ds.map((d) => d.code)).toEqual(["SPEC_SCHEMA", "SPEC_SCHEMA"]);
    expect(ds.map((d) => d.line)).toEqual([16, 17]);
  });
});
