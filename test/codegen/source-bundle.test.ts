/**
 * @module The cached bundle the `taquba` launcher runs in a checkout: built
 * once, reused while every source and the bundle itself keep their hashes,
 * rebuilt when either changed, and the CLI run from it generates the same
 * bytes as the sources do.
 */

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
// @ts-expect-error plain JavaScript without declarations, like the launcher that imports it
import { importBundled } from "../../codegen/cli/source-bundle.js";
import { scaledForLoad } from "../support/load.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const entry = pathToFileURL(join(root, "codegen", "cli", "cli.ts")).href;

let cache: string;
beforeEach(() => {
  cache = mkdtempSync(join(tmpdir(), "taquba-bundle-"));
});
afterEach(() => rmSync(cache, { recursive: true, force: true }));

type Manifest = { bundle: string; sources: Record<string, string> };
const manifest = (): Manifest => JSON.parse(readFileSync(join(cache, "manifest.json"), "utf8")) as Manifest;
const load = (): Promise<{ main?: unknown } | undefined> => (importBundled as (e: string, c: string) => Promise<{ main?: unknown } | undefined>)(entry, cache);

// The bundle is built by esbuild's own process and the last test runs the CLI in a child: 10 to 15 s of wall
// time a test at load 22 on two cores for under 0.4 s of CPU in this process. The limit guards against a
// hang and is stretched by the load (support/load.ts).
describe("source bundle", { timeout: scaledForLoad(15_000) }, () => {
  it("is built once, then reused while sources and bundle are unchanged", async () => {
    const mod = await load();
    expect(typeof mod?.main).toBe("function");
    const m = manifest();
    expect(Object.keys(m.sources)).toContain("codegen/cli/cli.ts");
    expect(Object.keys(m.sources)).toContain("codegen/generate.ts");
    const built = statSync(join(cache, "cli.mjs")).mtimeMs;
    await load();
    expect(statSync(join(cache, "cli.mjs")).mtimeMs).toBe(built);
  });

  it("is rebuilt when a recorded source hash or the bundle itself no longer matches", async () => {
    await load();
    const original = readFileSync(join(cache, "cli.mjs"), "utf8");
    writeFileSync(join(cache, "cli.mjs"), `${original}\n// edited\n`);
    await load();
    expect(readFileSync(join(cache, "cli.mjs"), "utf8")).toBe(original);

    const m = manifest();
    writeFileSync(join(cache, "manifest.json"), JSON.stringify({ ...m, sources: { ...m.sources, "codegen/cli/cli.ts": "0".repeat(64) } }));
    await load();
    expect(manifest().sources["codegen/cli/cli.ts"]).toBe(m.sources["codegen/cli/cli.ts"]);
  });

  it("runs the CLI with the same result as the sources: the project's output is up to date", () => {
    const r = spawnSync(process.execPath, [join(root, "codegen", "bin.js"), "codegen", "--check"], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
      killSignal: "SIGKILL",
    });
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^generated is up to date with \d+ spec files/);
    expect(r.status).toBe(0);
  });
});
