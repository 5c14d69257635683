/**
 * @module Specs built to exhaust or confuse the generator end in a located
 * diagnostic, never a stack trace: billion-laughs aliases, oversized files,
 * `!!binary` and other non-JSON tags, and names spelt `__proto__`.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { generate } from "../../codegen/generate.js";
import { MAX_SPEC_CHARS } from "../../codegen/analyse/load-spec.js";
import { cpuTimed } from "../support/cpu-time.js";

const laughs = (levels: number, width = 9) => {
  const lines = [`version: 1`, `package: p`, `description: x`, `l0: &l0 [${Array(width).fill('"lol"').join(",")}]`];
  for (let i = 1; i <= levels; i++)
    lines.push(
      `l${i}: &l${i} [${Array(width)
        .fill(`*l${i - 1}`)
        .join(",")}]`,
    );
  return `${lines.join("\n")}\n`;
};

/** The CLI by its own path, not one relative to the working directory: the suite runs from any checkout location. */
const BIN = fileURLToPath(new URL("../../codegen/bin.js", import.meta.url));

const diagnosticsOf = (source: string) => generate([{ file: "p.taquba.yaml", source }]).diagnostics;

describe("hostile YAML", () => {
  it("billion laughs: a located SPEC_TOO_LARGE, found before anything is expanded", () => {
    const { result: d, cpuMs } = cpuTimed(() => diagnosticsOf(laughs(9)));
    expect(cpuMs, "CPU ms of the generation").toBeLessThan(5_000);
    expect(d).toHaveLength(1);
    expect(d[0]).toMatchObject({ code: "SPEC_TOO_LARGE", severity: "error" });
    expect(d[0]!.line).toBeGreaterThan(4);
    expect(d[0]!.message).toContain("alias");
  });

  it("a spec file over the size limit is refused unread", () => {
    const d = diagnosticsOf(`version: 1\npackage: p\ndescription: "${"x".repeat(MAX_SPEC_CHARS)}"\n`);
    expect(d).toMatchObject([{ code: "SPEC_TOO_LARGE", line: 1, column: 1 }]);
  });

  it.each([
    ["!!binary aGVsbG8=", "tag:yaml.org,2002:binary"],
    ["!!timestamp 2001-12-14", "tag:yaml.org,2002:timestamp"],
    ["!!set { a }", "tag:yaml.org,2002:set"],
  ])("the tag in %s is refused where it is written", (value, tag) => {
    const d = diagnosticsOf(`version: 1\npackage: p\ndescription: ${value}\n`);
    expect(d).toMatchObject([{ code: "UNSUPPORTED_TAG", line: 3 }]);
    expect(d[0]!.message).toContain(tag);
  });

  it("a property named __proto__ gets a diagnostic instead of vanishing", () => {
    const d = diagnosticsOf(
      `version: 1\npackage: p\ntypes:\n  Thing:\n    type: object\n    properties:\n      __proto__: { type: string }\n      ok: { type: string }\n`,
    );
    expect(d).toMatchObject([{ code: "FORBIDDEN_NAME", line: 7, column: 7 }]);
  });

  const dir = mkdtempSync(join(tmpdir(), "taquba-hostile-yaml-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the CLI reports a billion-laughs and a !!binary spec as diagnostics, exit code 1, no stack trace", async () => {
    writeFileSync(join(dir, "a.taquba.yaml"), laughs(9));
    writeFileSync(join(dir, "b.taquba.yaml"), "version: 1\npackage: b\ndescription: !!binary aGVsbG8=\n");
    const err = await promisify(execFile)(process.execPath, [BIN, "codegen", dir, "--out", join(dir, "out")], {
      // A synchronous child cannot be tied to the test: bound its life instead.
      timeout: 60_000,
      killSignal: "SIGKILL",
    }).then(
      () => undefined,
      (e: { code: number; stderr: string; stdout: string }) => e,
    );
    expect(err?.code).toBe(1);
    const text = `${err?.stdout ?? ""}${err?.stderr ?? ""}`;
    expect(text).toContain("SPEC_TOO_LARGE");
    expect(text).toContain("UNSUPPORTED_TAG");
    expect(text).not.toMatch(/\n\s+at .*\(/);
  }, 60_000);
});
