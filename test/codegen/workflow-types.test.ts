/**
 * Type tests of generated workflow code: typing/workflow-usage.ts compiles,
 * and with its `@ts-expect-error` directives removed every marked line (and
 * no other) fails to compile, so no directive hides a file that never
 * typechecks. Scaffolded workflow stubs compile against the generated code.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { analyse } from "../../codegen/generate.js";
import { scaffoldFiles } from "../../codegen/cli/scaffold.js";
import { scaledForLoad } from "../support/load.js";
import { expectErrorDirectives, root, useTypecheck } from "./typecheck.js";

const typecheck = useTypecheck("taquba-wf-types-");

// Each test runs the compiler once or twice in a child process, about 2.5 s of CPU a run (the generated code
// and the runtime it imports): 25 to 43 s of wall time for one run at load 22-24 on two cores, where a test
// of two runs went past 60 s. The limit guards against a hang and is stretched by the load (support/load.ts).
describe("generated workflow types", { timeout: scaledForLoad(60_000) }, () => {
  const source = readFileSync(join(root, "test", "codegen", "typing", "workflow-usage.ts"), "utf8");
  const lines = source.split("\n");
  const { marked, stripped } = expectErrorDirectives(source);

  it("correct use compiles, and a check that reports nothing can report something", async () => {
    expect(await typecheck(source, "wf-usage")).toEqual([]);
    expect(await typecheck(`${source}\nconst broken: number = "x";\n`, "wf-sanity")).toEqual([lines.length + 1]);
  });

  it("each marked misuse is a compile error on its own line, and nothing else is", async () => {
    expect(marked.length).toBeGreaterThanOrEqual(20);
    const errors = new Set(await typecheck(stripped, "wf-stripped"));
    expect(marked.filter((line) => !errors.has(line))).toEqual([]);
    expect([...errors].filter((line) => !marked.includes(line))).toEqual([]);
  });

  it("scaffolded workflow stubs compile against the generated code", async () => {
    const inputs = [{ file: "schemas/orders.taquba.yaml", source: readFileSync(join(root, "schemas", "orders.taquba.yaml"), "utf8") }];
    const stubs = scaffoldFiles(analyse(inputs).packages, "../generated");
    expect(stubs.map((f) => f.path)).toEqual(["orders/order-fulfil.workflow.ts"]);
    const stub = stubs[0]?.content ?? "";
    for (const method of ["reserve(", "awaitPayment(", "pack(", "ship("]) expect(stub).toContain(`async ${method}`);
    expect(await typecheck(stub.replace(/from "(?:\.\.\/)+generated\//, `from "../../../generated/`), "wf-stub")).toEqual([]);
  });
});
