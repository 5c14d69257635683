/**
 * Type tests of generated code: typing/generated-usage.ts compiles, and with
 * its `@ts-expect-error` directives removed every marked line fails to
 * compile (so the directives are not hiding a file that never typechecks).
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { analyse } from "../../codegen/generate.js";
import { scaffoldFiles } from "../../codegen/cli/scaffold.js";
import { scaledForLoad } from "../support/load.js";
import { expectErrorDirectives, root, useTypecheck } from "./typecheck.js";

const typecheck = useTypecheck("taquba-types-");

// Each test runs the compiler once or twice in a child process, about 2.3 s of CPU a run (the generated code
// and the runtime it imports): 9.5 to 46 s of wall time for one run at load 21-24 on two cores, where a test
// of two runs went past 30 s. The limit guards against a hang and is stretched by the load (support/load.ts).
describe("generated types", { timeout: scaledForLoad(60_000) }, () => {
  const source = readFileSync(join(root, "test", "codegen", "typing", "generated-usage.ts"), "utf8");
  const lines = source.split("\n");
  const { marked, stripped } = expectErrorDirectives(source);

  it("correct use compiles and every misuse directive is needed", async () => {
    expect(await typecheck(source, "usage")).toEqual([]);
    // A check that reports nothing must be able to report something.
    expect(await typecheck(`${source}\nconst broken: number = "x";\n`, "sanity")).toEqual([lines.length + 1]);
  });

  it("each marked misuse is a compile error on its own line", async () => {
    expect(marked.length).toBeGreaterThanOrEqual(15);
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
    // One program holding every stub, each import pointed at the real generated folder
    // (the stubs' shared import of PermanentError once, at the top).
    const permanent = 'import { PermanentError } from "taquba";\n';
    for (const f of stubs) expect(f.content).toContain(permanent);
    const program =
      permanent +
      stubs
        .map((f, i) =>
          f.content
            .replace(permanent, "")
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
