/**
 * @module The published package works: `npm pack` (which builds dist/
 * through `prepack`), install the tarball with its peers into a fresh
 * project, then `npx taquba init`, typecheck, and run the submit and worker
 * scripts end to end on a local directory. Also checks what the tarball
 * holds (the subpath entries, no `@internal` declarations), that require()
 * loads it, that the AWS SDK prints no Node-version notice, and that an
 * edited spec fails the pretest freshness check in one line.
 *
 * Installs with `--prefer-offline`, so the npm cache serves the packages.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScript } from "../support/child-script.js";
import { startLocalLatenessProbe } from "../support/lateness-probe.js";
import { scaledForLoad } from "../support/load.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const devVersions = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies;
const PEERS = ["@eslint-community/regexpp", "ajv", "diff", "ts-morph", "yaml"];
const TOOLS = ["tsx", "typescript", "@types/node"];

let work: string;
let project: string;
let tarball: string;

// Every limit here guards against a hang and is stretched by the load (support/load.ts), read when the
// limit is set: each step is a chain of processes (npm, npx, tsx, tsc) whose wall time grows with the load.
// At load 19-22 on two cores: npm pack 60 s of wall time for 8.4 s of CPU, npm install 52 s for 8.5 s, the
// require check 9.5 s for 0.9 s, each init 9 to 19 s for 1.1 to 1.8 s, tsc 16 s for 2.8 s, the submit
// script 19 s for 3.1 s; the end-to-end test 119 to 167 s in all.

/** Runs `cmd` to its end, SIGKILLed after `timeout` ms (a synchronous child cannot be tied to the test). */
function sh(cmd: string, args: string[], cwd: string, timeout = scaledForLoad(120_000)): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout, killSignal: "SIGKILL", env: { ...process.env, npm_config_update_notifier: "false" } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "taquba-pack-"));
  const packed = sh("npm", ["pack", "--json", "--pack-destination", work], root);
  expect(packed.status, packed.stderr).toBe(0);
  const info = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as Array<{ filename: string }>;
  tarball = join(work, info[0]!.filename);
  project = join(work, "app");
  execFileSync("mkdir", [project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  const deps = [...PEERS, ...TOOLS].map((d) => `${d}@${devVersions[d]}`);
  const installed = sh("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, ...deps], project);
  expect(installed.status, installed.stderr).toBe(0);
}, scaledForLoad(200_000));

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
}, 120_000);

describe("the packed package", () => {
  it("holds dist with every entry, the schema and the bin, and no @internal declarations", () => {
    const listing = execFileSync("tar", ["tzf", tarball], { encoding: "utf8" }).split("\n");
    for (const f of [
      "package/dist/runtime/index.js",
      "package/dist/runtime/testing.js",
      "package/dist/runtime/generated.js",
      "package/dist/codegen/index.js",
      "package/schemas/taquba-spec.schema.json",
      "package/codegen/bin.js",
      "package/dist/operator/cli/main.js",
      "package/operator/dashboard/public/index.html",
      "package/operator/dashboard/public/app.js",
    ]) {
      expect(listing, f).toContain(f);
    }
    expect(listing.filter((f) => f.endsWith(".test.js"))).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(project, "node_modules", "taquba", "package.json"), "utf8")) as { exports: Record<string, unknown> };
    expect(Object.keys(pkg.exports)).toEqual([".", "./testing", "./generated", "./codegen", "./package.json"]);
    const dts = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? dts(join(dir, e.name)) : e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
      );
    const withInternal = dts(join(project, "node_modules", "taquba", "dist")).filter((f) => readFileSync(f, "utf8").includes("@internal"));
    expect(withInternal).toEqual([]);
  });

  it("loads through import and require, with no AWS SDK Node-version notice", { timeout: scaledForLoad(15_000) }, () => {
    const script = [
      "const t = require('taquba');",
      "new t.S3Store({ bucket: 'bucket', clientConfig: { region: 'us-east-1' } });",
      "import('taquba/testing').then((m) => console.log(typeof t.Queue, typeof m.withFaults));",
    ].join("\n");
    const r = sh(process.execPath, ["-e", script], project);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("function function");
    expect(r.stderr).not.toContain("NodeVersionSupportWarning");
  });

  it("npx taquba init, then typecheck, submit and run the worker end to end; an edited spec fails the pretest check in one line", {
    timeout: scaledForLoad(150_000),
  }, async () => {
    const init = sh("npx", ["--no-install", "taquba", "init"], project);
    expect(init.status, init.stderr + init.stdout).toBe(0);
    expect(init.stdout).toContain("created schemas/app.taquba.yaml");
    const again = sh("npx", ["--no-install", "taquba", "init"], project);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("writes nothing over existing files");

    // With the package's own declarations checked too: stripped internals must leave them consistent.
    const tsc = sh("npx", ["--no-install", "tsc", "-p", ".", "--skipLibCheck", "false"], project);
    expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);

    const submit = sh("npm", ["run", "--silent", "submit"], project, scaledForLoad(30_000));
    expect(submit.status, submit.stderr).toBe(0);
    expect(submit.stdout).toContain("submitted job");

    const worker = startScript(join(project, "src", "worker.ts"), [], { cwd: project });
    try {
      await worker.waitFor((lines) => lines.some((l) => l.includes("greet: hello, Ada")) && lines.some((l) => l.includes("acc-1 approved by Grace")));
    } catch (e) {
      await worker.kill();
      throw e;
    }
    // Stops within 5 s, less the time this process was not run (on busy cores the machine's stalls hold up both).
    const stalls = startLocalLatenessProbe();
    try {
      const stopped = Date.now();
      process.kill(worker.pid, "SIGTERM");
      const exit = await worker.exited;
      const exitedAt = Date.now();
      expect(exit).toEqual({ code: 0, signal: null });
      const notRun = await stalls.notRunWithin(stopped, exitedAt);
      expect(exitedAt - stopped - notRun, `exit ${exitedAt - stopped} ms after SIGTERM, ${notRun} ms of it with this process not run`).toBeLessThan(5_000);
    } finally {
      stalls.stop();
    }
    expect(worker.lines).toContain("stopped");

    // The operator CLI, from dist/, reads what the worker left (a JobRunner's step queue is "jobs").
    const jobs = sh(
      "npx",
      ["--no-install", "taquba", "jobs", "list", pathToFileURL(join(project, ".taquba-data")).href, "--name", "app", "--step-queue", "jobs"],
      project,
    );
    expect(jobs.status, jobs.stderr).toBe(0);
    expect(jobs.stdout).toContain("greet");

    expect(sh("npm", ["run", "--silent", "pretest"], project).status).toBe(0);
    appendFileSync(join(project, "schemas", "app.taquba.yaml"), "# an edit\n");
    const stale = sh("npm", ["run", "--silent", "pretest"], project);
    expect(stale.status).not.toBe(0);
    expect(stale.stderr.trim().split("\n")[0]).toBe("schemas/app.taquba.yaml changed since generated/app was generated: run npx taquba codegen");
  });
});
