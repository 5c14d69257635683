/**
 * @module The generation cache behind `--watch`: a pass re-emits only the
 * packages whose spec text changed, gives the same files and diagnostics
 * as a pass without cache (also across errors and removed specs), and the
 * CLI says which packages a watch pass re-emitted.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { main, type CliIo } from "../../codegen/cli/cli.js";
import { generate, GenerationCache, type SpecInput } from "../../codegen/generate.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = join(here, "..", "..");
const fixtures = join(here, "fixtures");

function fixtureInputs(): SpecInput[] {
  return readdirSync(fixtures).flatMap((name) =>
    readdirSync(join(fixtures, name))
      .filter((f) => f.endsWith(".taquba.yaml"))
      .map((f) => ({
        file: relative(root, join(fixtures, name, f))
          .split("\\")
          .join("/"),
        source: readFileSync(join(fixtures, name, f), "utf8"),
      })),
  );
}

/** The same pass without a cache: what every cached pass must equal. */
function expectSameAsUncached(inputs: SpecInput[], cache: GenerationCache): void {
  const cached = generate(inputs, cache);
  const fresh = generate(inputs);
  expect(cached.diagnostics).toEqual(fresh.diagnostics);
  expect(cached.files).toEqual(fresh.files);
  expect(cached.locks.map((l) => l.content)).toEqual(fresh.locks.map((l) => l.content));
}

// Whole generations in this process, several a test: 1.7 s of CPU, 17 s of wall time at load 22 on two cores.
// The limit guards against a hang.
describe("GenerationCache", { timeout: HEAVY_TEST_MS }, () => {
  it("re-emits only the package whose spec changed, with the same output as a full pass", () => {
    const inputs = fixtureInputs();
    const minimal = inputs.findIndex((i) => i.file.endsWith("minimal.taquba.yaml"));
    expect(inputs.length).toBeGreaterThanOrEqual(3);
    const cache = new GenerationCache();

    expectSameAsUncached(inputs, cache);
    expect(cache.lastEmitted).toEqual(inputs.map((i) => i.file).sort());

    expectSameAsUncached(inputs, cache);
    expect(cache.lastEmitted).toEqual([]);

    const changed = inputs.map((i, n) => (n === minimal ? { ...i, source: i.source.replace("  pong:", "  pong:\n    description: Answers.") } : i));
    expectSameAsUncached(changed, cache);
    expect(cache.lastEmitted).toEqual([inputs[minimal]?.file]);
  });

  it("stays correct across a spec error, its fix and a removed spec", () => {
    const inputs = fixtureInputs();
    const cache = new GenerationCache();
    expectSameAsUncached(inputs, cache);

    const broken = inputs.map((i, n) => (n === 0 ? { ...i, source: `${i.source}\nunknown_key: 1\n` } : i));
    const failed = generate(broken, cache);
    expect(failed.files).toEqual([]);
    expect(failed.diagnostics.some((d) => d.code === "SPEC_SCHEMA")).toBe(true);
    expectSameAsUncached(broken, cache);

    expectSameAsUncached(inputs, cache);
    expect(cache.lastEmitted).toEqual([]);

    const fewer = inputs.slice(1);
    expectSameAsUncached(fewer, cache);
    expect(cache.lastEmitted).toEqual([]);
    // A spec that comes back is analysed and emitted afresh.
    expectSameAsUncached(inputs, cache);
    expect(cache.lastEmitted).toEqual([inputs[0]?.file]);
  });
});

const SPEC = (pkg: string, description = "Pings.") => `version: 1
package: ${pkg}
jobs:
  ping:
    description: ${description}
    input: { type: object }
    output: { type: "null" }
`;

describe("taquba codegen --watch", () => {
  it("re-emits only the package whose spec changed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "taquba-watch-"));
    try {
      mkdirSync(join(dir, "schemas"));
      writeFileSync(join(dir, "schemas", "a.taquba.yaml"), SPEC("alpha"));
      writeFileSync(join(dir, "schemas", "b.taquba.yaml"), SPEC("beta"));
      const lines: string[] = [];
      const waiters: Array<{ pattern: RegExp; done: (line: string) => void }> = [];
      const push = (t: string) => {
        lines.push(t);
        for (const w of waiters.splice(0))
          if (w.pattern.test(t)) w.done(t);
          else waiters.push(w);
      };
      const next = (pattern: RegExp) => new Promise<string>((done) => waiters.push({ pattern, done }));
      const io: CliIo = { cwd: dir, out: push, err: push };
      const stop = new AbortController();
      // A pass that writes nothing ends in "nothing was written"; waiting for either keeps a failure fast.
      const first = next(/^re-emitted|nothing was written/);
      const watching = next(/^watching/);
      const done = main(["codegen", "--watch"], io, stop.signal);
      expect(await first).toBe("re-emitted 2 of 2 packages: schemas/a.taquba.yaml, schemas/b.taquba.yaml");
      await watching;

      const again = next(/^re-emitted|nothing was written/);
      writeFileSync(join(dir, "schemas", "b.taquba.yaml"), SPEC("beta", "Pings twice."));
      expect(await again).toBe("re-emitted 1 of 2 packages: schemas/b.taquba.yaml");
      const written = next(/written/);
      expect(await written).toMatch(/^generated: [1-9]\d* written/);
      expect(readFileSync(join(dir, "generated", "beta", "definitions.ts"), "utf8")).toContain("Pings twice.");

      stop.abort();
      expect(await done).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
