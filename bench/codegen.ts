/**
 * @module Benchmark: code generation for a large spec.
 *
 * Builds a spec with 200 jobs, 20 signals and 10 headers in a temporary
 * folder, then times `taquba codegen` (a cold process, as `npm run codegen`
 * runs it), `taquba codegen --check` over the result, and the in-process
 * `generate()` call, and `--check` both ways: answered by the output stamp
 * (the normal case after `npm run codegen`) and by full regeneration (no
 * stamp). Targets: generation under 3 s, check under 2 s.
 * Every job's schemas differ slightly, so no two validators are shared: the
 * worst case for the generator, which compiles identical schemas once.
 *
 * Run: npx tsx bench/codegen.ts
 */

import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generate } from "../codegen/generate.js";

const JOBS = 200;
const SIGNALS = 20;
const HEADERS = 10;
const RUNS = 3;

function bigSpec(): string {
  const lines = ["version: 1", "package: bench", "types:", "  Money:", "    type: object", "    required: [amount_cents, currency]", "    properties:", "      amount_cents: { type: integer, minimum: 0 }", "      currency: { type: string, enum: [EUR, USD] }", "headers:"];
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
  return `${lines.join("\n")}\n`;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function time(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "taquba-bench-codegen-"));
try {
  mkdirSync(join(dir, "schemas"));
  const spec = bigSpec();
  writeFileSync(join(dir, "schemas", "bench.taquba.yaml"), spec);
  const bin = join(root, "codegen", "bin.js");
  const cli = (...args: string[]) => execFileSync(process.execPath, [bin, "codegen", ...args], { cwd: dir, stdio: "pipe" });
  // CPU seconds of a cold CLI process (user + system), which contention from
  // neighbours on the shared cores inflates far less than wall time.
  const cpuOf = (...args: string[]): number | undefined => {
    if (!existsSync("/usr/bin/time")) return undefined;
    const r = spawnSync("/usr/bin/time", ["-f", "%U %S", process.execPath, bin, "codegen", ...args], { cwd: dir, encoding: "utf8" });
    const m = /([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
    return m === null ? undefined : (Number(m[1]) + Number(m[2])) * 1000;
  };

  const inProcess: number[] = [];
  let files = 0;
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    inProcess.push(
      time(() => {
        const r = generate([{ file: "schemas/bench.taquba.yaml", source: spec }]);
        files = r.files.length;
        bytes = r.files.reduce((n, f) => n + f.content.length, 0);
      }),
    );
  }
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

  console.log(`codegen benchmark: ${JOBS} jobs, ${SIGNALS} signals, ${HEADERS} headers; spec ${spec.length} bytes`);
  console.log(`output: ${files} files, ${(bytes / 1024).toFixed(0)} KiB (validators ${(validators / 1024).toFixed(0)} KiB)`);
  console.log(`machine: ${process.platform} ${process.arch}, node ${process.version}, 2 shared cores; median of ${RUNS}`);
  console.log(`generate() in process:        ${median(inProcess).toFixed(0)} ms  (runs: ${inProcess.map((x) => x.toFixed(0)).join(", ")})`);
  console.log(`taquba codegen (cold process): ${median(gen).toFixed(0)} ms  (runs: ${gen.map((x) => x.toFixed(0)).join(", ")})  target < 3000 ms`);
  console.log(`taquba codegen --check:        ${median(check).toFixed(0)} ms  (runs: ${check.map((x) => x.toFixed(0)).join(", ")})  target < 2000 ms (answered by the output stamp)`);
  console.log(`--check, full regeneration:    ${median(fullCheck).toFixed(0)} ms  (runs: ${fullCheck.map((x) => x.toFixed(0)).join(", ")})  (no stamp: regenerate in memory and compare)`);
  if (genCpu.length > 0) {
    console.log(`CPU time, cold process:        codegen ${median(genCpu).toFixed(0)} ms, full --check ${median(checkCpu).toFixed(0)} ms (user + system, median of ${RUNS})`);
  }
  console.log(`load average at the end: ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
