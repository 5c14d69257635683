/**
 * @module Benchmark: code generation for a large spec.
 *
 * Builds a spec with 200 jobs, 20 signals, 10 headers and 20 workflows of 4
 * steps (one waiting for a signal) in a temporary folder, then times, each
 * a median of 3:
 * - `generate()` in this process (warm after the first run);
 * - `taquba codegen` in a cold process writing everything, as `npm run
 *   codegen` runs it (`node codegen/bin.js`, sources through tsx);
 * - `taquba codegen --check` answered by the output stamp (the normal case
 *   after `npm run codegen`) and without the stamp, which regenerates
 *   everything in memory and compares (the target's worst case);
 * - the CPU time (user + system) of those cold processes, which contention
 *   on the shared cores inflates far less than wall time;
 * - `--watch`: from saving one spec to the pass having written its files,
 *   with the large spec and a small one watched together, for a change to
 *   the small spec and for a change to the large one.
 * Targets: generation under 3 s, check under 2 s.
 * Every job's schemas differ slightly, so no two validators are shared: the
 * worst case for the generator, which compiles identical schemas once.
 *
 * Run: npx tsx bench/codegen.ts [--root DIR]
 * `--root` times the generator of another checkout (for before/after runs).
 */

import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { loadAverageText } from "./support/load-average.js";

const JOBS = 200;
const SIGNALS = 20;
const HEADERS = 10;
const WORKFLOWS = 20;
const STEPS = 4;
const RUNS = 3;

function bigSpec(revision = 0): string {
  const lines = [
    "version: 1",
    "package: bench",
    `description: Benchmark spec, revision ${revision}.`,
    "types:",
    "  Money:",
    "    type: object",
    "    required: [amount_cents, currency]",
    "    properties:",
    "      amount_cents: { type: integer, minimum: 0 }",
    "      currency: { type: string, enum: [EUR, USD] }",
    "headers:",
  ];
  for (let h = 0; h < HEADERS; h++) lines.push(`  header_${h}: { type: string, maxLength: 64${h % 2 === 0 ? "" : ", optional: true"} }`);
  lines.push("signals:");
  for (let s = 0; s < SIGNALS; s++) {
    lines.push(
      `  signal_${s}:`,
      `    key: "s${s}:{id}"`,
      `    params: { id: { type: string } }`,
      `    payload: { type: object, required: [at], properties: { at: { type: string, format: date-time }, amount: { $ref: "#/types/Money" } } }`,
    );
  }
  lines.push("jobs:");
  for (let j = 0; j < JOBS; j++) {
    lines.push(
      `  group_${j % 10}.job_${j}:`,
      `    description: Benchmark job ${j}.`,
      `    input:`,
      `      type: object`,
      `      required: [id, email, lines]`,
      `      properties:`,
      `        id: { type: string, minLength: 1 }`,
      `        email: { type: string, format: email }`,
      `        note: { type: string, maxLength: ${500 + j} }`,
      `        lines: { type: array, items: { type: object, required: [sku, qty], properties: { sku: { type: string }, qty: { type: integer, minimum: 1 }, price: { $ref: "#/types/Money" } } } }`,
      `    output: { type: object, required: [ok], properties: { ok: { type: boolean }, count: { type: integer, maximum: ${1000 + j} }, total: { $ref: "#/types/Money" } } }`,
      `    error: { type: object, required: [code], properties: { code: { enum: [a, b, e${j}] } } }`,
      `    idempotency_key: "job${j}:{id}"`,
      `    max_attempts: 5`,
    );
  }
  // Each workflow: an entry step, a step entered by a signal (or its timeout), then two more steps.
  lines.push("workflows:");
  for (let w = 0; w < WORKFLOWS; w++) {
    lines.push(
      `  flow_${w % 5}.run_${w}:`,
      `    description: Benchmark workflow ${w}.`,
      `    input: { type: object, required: [id], properties: { id: { type: string, minLength: 1 }, amount: { $ref: "#/types/Money" }, limit: { type: integer, maximum: ${100 + w} } } }`,
      `    result: { type: object, required: [ok], properties: { ok: { type: boolean }, steps: { type: integer, maximum: ${10 + w} } } }`,
      `    error: { type: object, required: [reason], properties: { reason: { enum: [timeout, rejected, r${w}] } } }`,
      `    steps:`,
      `      start:`,
      `        next: [wait]`,
      `      wait:`,
      `        payload: { type: object, required: [id], properties: { id: { type: string }, attempt: { type: integer, maximum: ${5 + w} } } }`,
      `        waits_for: signal_${w % SIGNALS}`,
      `        timeout_ms: 60000`,
      `        next: [work, wait]`,
      `      work:`,
      `        payload: { type: object, required: [id, at], properties: { id: { type: string }, at: { type: string, format: date-time }, n: { type: integer, maximum: ${7 + w} } } }`,
      `        next: [finish]`,
      `      finish:`,
      `        payload: { type: object, required: [id], properties: { id: { type: string }, total: { $ref: "#/types/Money" } } }`,
    );
  }
  return `${lines.join("\n")}\n`;
}

const SMALL_SPEC = (revision: number) => `version: 1
package: small
description: A small spec watched beside the large one, revision ${revision}.
jobs:
  ping:
    input: { type: object, required: [id], properties: { id: { type: string } } }
    output: { type: "null" }
`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function time(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

const show = (xs: number[]) => `${median(xs).toFixed(0)} ms  (runs: ${xs.map((x) => x.toFixed(0)).join(", ")})`;

const { values } = parseArgs({ options: { root: { type: "string" } } });
const root = values.root === undefined ? join(dirname(fileURLToPath(import.meta.url)), "..") : resolve(values.root);
const { generate } = (await import(pathToFileURL(join(root, "codegen", "generate.ts")).href)) as typeof import("../codegen/generate.js");
const bin = join(root, "codegen", "bin.js");

/** Times `--watch` from writing `file` to the pass that follows having written (or refused) its output. */
async function watchPasses(dir: string, edits: Array<() => string>): Promise<number[]> {
  const child = spawn(process.execPath, [bin, "codegen", "--watch"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let buffered = "";
  let waiter: { pattern: RegExp; done: () => void } | undefined;
  const onData = (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (waiter?.pattern.test(line)) {
        const w = waiter;
        waiter = undefined;
        w.done();
      }
    }
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const next = (pattern: RegExp) => new Promise<void>((done) => (waiter = { pattern, done }));
  try {
    await next(/^watching/);
    const out: number[] = [];
    for (const edit of edits) {
      const passed = next(/\d+ written|nothing was written/);
      const t = performance.now();
      edit();
      await passed;
      out.push(performance.now() - t);
    }
    return out;
  } finally {
    child.kill("SIGTERM");
  }
}

const loadBefore = loadAverageText();
const dir = mkdtempSync(join(tmpdir(), "taquba-bench-codegen-"));
try {
  mkdirSync(join(dir, "schemas"));
  const spec = bigSpec();
  writeFileSync(join(dir, "schemas", "bench.taquba.yaml"), spec);
  const cli = (...args: string[]) => execFileSync(process.execPath, [bin, "codegen", ...args], { cwd: dir, stdio: "pipe" });
  // CPU milliseconds of a cold CLI process (user + system).
  const cpuOf = (...args: string[]): number | undefined => {
    if (!existsSync("/usr/bin/time")) return undefined;
    const r = spawnSync("/usr/bin/time", ["-f", "%U %S", process.execPath, bin, "codegen", ...args], { cwd: dir, encoding: "utf8" });
    const m = /([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
    return m === null ? undefined : (Number(m[1]) + Number(m[2])) * 1000;
  };

  const inProcess: number[] = [];
  let files = 0;
  let bytes = 0;
  let errors = 0;
  for (let i = 0; i < RUNS; i++) {
    inProcess.push(
      time(() => {
        const r = generate([{ file: "schemas/bench.taquba.yaml", source: spec }]);
        files = r.files.length;
        bytes = r.files.reduce((n, f) => n + f.content.length, 0);
        errors = r.diagnostics.filter((d) => d.severity === "error").length;
      }),
    );
  }
  if (errors > 0 || files === 0) throw new Error(`the benchmark spec does not generate (${errors} errors)`);
  const gen: number[] = [];
  const check: number[] = [];
  const fullCheck: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    rmSync(join(dir, "generated"), { recursive: true, force: true });
    gen.push(time(() => cli()));
    check.push(time(() => cli("--check")));
    // Without the stamp, --check regenerates everything in memory and compares.
    rmSync(join(dir, "generated", "taquba-stamp.json"));
    fullCheck.push(time(() => cli("--check")));
  }
  const genCpu: number[] = [];
  const checkCpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    rmSync(join(dir, "generated"), { recursive: true, force: true });
    const g = cpuOf();
    rmSync(join(dir, "generated", "taquba-stamp.json"), { force: true });
    const c = cpuOf("--check");
    if (g !== undefined) genCpu.push(g);
    if (c !== undefined) checkCpu.push(c);
  }
  const validators = readFileSync(join(dir, "generated", "bench", "validators.ts"), "utf8").length;

  // --watch over the large spec and a small one: edit each in turn (descriptions only, so nothing breaks the lock).
  const small = join(dir, "schemas", "small.taquba.yaml");
  const big = join(dir, "schemas", "bench.taquba.yaml");
  writeFileSync(small, SMALL_SPEC(0));
  cli();
  let revision = 0;
  const editSmall = () => {
    writeFileSync(small, SMALL_SPEC(++revision));
    return small;
  };
  const editBig = () => {
    writeFileSync(big, bigSpec(++revision));
    return big;
  };
  const watchSmall = await watchPasses(
    dir,
    Array.from({ length: RUNS }, () => editSmall),
  );
  const watchBig = await watchPasses(
    dir,
    Array.from({ length: RUNS }, () => editBig),
  );

  console.log(
    `codegen benchmark: ${JOBS} jobs, ${SIGNALS} signals, ${HEADERS} headers, ${WORKFLOWS} workflows of ${STEPS} steps (one waits for a signal); spec ${spec.length} bytes`,
  );
  console.log(`generator: ${root}`);
  console.log(`output: ${files} files, ${(bytes / 1024).toFixed(0)} KiB (validators ${(validators / 1024).toFixed(0)} KiB)`);
  console.log(`machine: ${process.platform} ${process.arch}, node ${process.version}, 2 shared cores; median of ${RUNS}`);
  console.log(`generate() in process:              ${show(inProcess)}`);
  console.log(`taquba codegen (cold process):       ${show(gen)}  target < 3000 ms`);
  console.log(`taquba codegen --check (stamp):      ${show(check)}  target < 2000 ms`);
  console.log(`taquba codegen --check (no stamp):   ${show(fullCheck)}  target < 2000 ms (regenerates in memory and compares)`);
  if (genCpu.length > 0) {
    console.log(`CPU time, cold process:              codegen ${show(genCpu)}; --check without stamp ${show(checkCpu)}`);
  }
  console.log(`--watch, small spec saved -> written: ${show(watchSmall)}`);
  console.log(`--watch, large spec saved -> written: ${show(watchBig)}`);
  console.log(`load average (1, 5, 15 min): ${loadBefore} at the start, ${loadAverageText()} at the end`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
