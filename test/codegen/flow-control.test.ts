/**
 * @module `concurrency`, `rate_limit` and `debounce` on a spec's jobs and workflows:
 * every problem located at its line and column, and the generated
 * definition carrying the limits and key templates.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generate } from "../../codegen/generate.js";
import type { Diagnostic } from "../../codegen/analyse/diagnostics.js";

const SPEC = (flow: string) => `version: 1
package: p
headers:
  tenant_id: { type: string }
  region: { type: string, optional: true }
jobs:
  report.build:
    input: { type: object, required: [customer], properties: { customer: { type: object, required: [id], properties: { id: { type: string } } }, note: { type: string } } }
    output: { type: object }
${flow}
workflows:
  order.fulfil:
    input: { type: object, required: [order_id], properties: { order_id: { type: string } } }
    result: { type: object }
    concurrency: { limit: 3, key: "{tenant_id}" }
    steps:
      reserve: {}
`;

function run(source: string): readonly Diagnostic[] {
  return generate([{ file: "spec.taquba.yaml", source }]).diagnostics;
}
const at = (ds: readonly Diagnostic[]) => ds.map((d) => [d.code, d.line, d.column]);

describe("flow control in a spec", () => {
  it("generates the limits and keys on the job's and the workflow's definitions", () => {
    const r = generate([
      {
        file: "spec.taquba.yaml",
        source: SPEC(`    concurrency: { limit: 2, key: "{tenant_id}" }\n    rate_limit: { limit: 10, period_ms: 60000, key: "{tenant_id}/{customer.id}" }`),
      },
    ]);
    expect(r.diagnostics).toEqual([]);
    const defs = r.files.find((f) => f.path.endsWith("definitions.ts"))!.content;
    expect(defs).toContain(
      'flowControl: { concurrency: { limit: 2, key: "{tenant_id}" }, rateLimit: { limit: 10, periodMs: 60000, key: "{tenant_id}/{customer.id}" } },',
    );
    expect(defs).toContain('flowControl: { concurrency: { limit: 3, key: "{tenant_id}" } },');
  });

  it("BAD_FLOW_CONTROL: a limit that is not positive, pointed at the value", () => {
    const ds = run(SPEC(`    concurrency: { limit: 0 }`));
    expect(at(ds)).toEqual([["BAD_FLOW_CONTROL", 10, 27]]);
    expect(ds[0]!.message).toContain('concurrency.limit of job "report.build" must be an integer from 1 to 1000000, got 0');
  });

  it("BAD_FLOW_CONTROL: a rate limit's period and limit out of range", () => {
    const ds = run(SPEC(`    rate_limit:\n      limit: -1\n      period_ms: 0`));
    expect(at(ds)).toEqual([
      ["BAD_FLOW_CONTROL", 11, 14],
      ["BAD_FLOW_CONTROL", 12, 18],
    ]);
  });

  it("BAD_KEY_TEMPLATE: a key naming neither a header nor an input field", () => {
    const ds = run(SPEC(`    concurrency: { limit: 2, key: "{tenant}" }`));
    expect(at(ds)).toEqual([["BAD_KEY_TEMPLATE", 10, 35]]);
    expect(ds[0]!.message).toContain('"{tenant}" names no header of the package and no field of the input; the package\'s headers: region, tenant_id');
  });

  it("BAD_KEY_TEMPLATE: an optional header or input field, which could not always build the key", () => {
    expect(at(run(SPEC(`    concurrency: { limit: 2, key: "{region}" }`)))).toEqual([["BAD_KEY_TEMPLATE", 10, 35]]);
    const ds = run(SPEC(`    rate_limit: { limit: 1, period_ms: 10, key: "{note}" }`));
    expect(at(ds)).toEqual([["BAD_KEY_TEMPLATE", 10, 49]]);
    expect(ds[0]!.message).toContain("optional");
  });

  it("BAD_KEY_TEMPLATE: a name that is both a header and an input field", () => {
    const spec = SPEC(`    concurrency: { limit: 2, key: "{tenant_id}" }`).replace(
      "note: { type: string }",
      "note: { type: string }, tenant_id: { type: string }",
    );
    const ds = run(spec);
    expect(at(ds)).toEqual([["BAD_KEY_TEMPLATE", 10, 35]]);
    expect(ds[0]!.message).toContain("names both a header of the package and a field of the input");
  });

  it("generates a job's and a workflow's debounce", () => {
    const spec = SPEC(`    debounce: { period_ms: 5000, key: "report/{customer.id}" }`).replace(
      '    concurrency: { limit: 3, key: "{tenant_id}" }\n',
      '    debounce: { period_ms: 200, key: "{tenant_id}" }\n',
    );
    const r = generate([{ file: "spec.taquba.yaml", source: spec }]);
    expect(r.diagnostics).toEqual([]);
    const defs = r.files.find((f) => f.path.endsWith("definitions.ts"))!.content;
    expect(defs).toContain('flowControl: { debounce: { periodMs: 5000, key: "report/{customer.id}" } },');
    expect(defs).toContain('flowControl: { debounce: { periodMs: 200, key: "{tenant_id}" } },');
  });

  it("generates the debounce of the documented spec's job and workflow", () => {
    // Read from beside this file, not from the working directory: the suite runs from any checkout location.
    const file = "test/codegen/fixtures/debounce/digest.taquba.yaml";
    const source = readFileSync(fileURLToPath(new URL("./fixtures/debounce/digest.taquba.yaml", import.meta.url)), "utf8");
    const r = generate([{ file, source }]);
    expect(r.diagnostics).toEqual([]);
    const defs = r.files.find((f) => f.path.endsWith("definitions.ts"))!.content;
    expect(defs).toContain('flowControl: { debounce: { periodMs: 30000, key: "{tenant_id}/{user_id}" } },');
    expect(defs).toContain('flowControl: { debounce: { periodMs: 5000, key: "{index}" } },');
  });

  it("BAD_FLOW_CONTROL: a debounce period that is zero, negative, fractional, not a number or longer than a day", () => {
    // An integer out of range is the generator's finding; a value that is no integer at all, the schema's.
    for (const [period, code] of [
      ["0", "BAD_FLOW_CONTROL"],
      ["-5", "BAD_FLOW_CONTROL"],
      ["86400001", "BAD_FLOW_CONTROL"],
      ["1e30", "BAD_FLOW_CONTROL"],
      ["1.5", "SPEC_SCHEMA"],
      [".nan", "SPEC_SCHEMA"],
      ['"500"', "SPEC_SCHEMA"],
    ] as const) {
      expect(at(run(SPEC(`    debounce: { period_ms: ${period}, key: "{tenant_id}" }`))), period).toEqual([[code, 10, 28]]);
    }
    const ds = run(SPEC(`    debounce: { period_ms: 0, key: "{tenant_id}" }`));
    expect(ds[0]!.message).toContain('debounce.period_ms of job "report.build" must be an integer from 1 to 86400000, got 0');
  });

  it("BAD_KEY_TEMPLATE: a debounce key naming a field the input does not have; SPEC_SCHEMA: a debounce without a key", () => {
    const ds = run(SPEC(`    debounce: { period_ms: 100, key: "{customer.name}" }`));
    expect(at(ds)).toEqual([["BAD_KEY_TEMPLATE", 10, 38]]);
    expect(ds[0]!.message).toContain('debounce key of job "report.build": "{customer.name}"');
    expect(at(run(SPEC(`    debounce: { period_ms: 100, key: "{region}" }`)))).toEqual([["BAD_KEY_TEMPLATE", 10, 38]]);
    expect(run(SPEC(`    debounce: { period_ms: 100 }`)).map((d) => d.code)).toEqual(["SPEC_SCHEMA"]);
  });

  it("SPEC_SCHEMA: an unknown field of a limit", () => {
    expect(run(SPEC(`    concurrency: { limit: 2, keys: "{tenant_id}" }`)).map((d) => d.code)).toEqual(["SPEC_SCHEMA"]);
  });
});
