#!/usr/bin/env node
/**
 * An estimate of the mutation score of runtime/engine and runtime/queue as a
 * whole, from a seeded random sample of their mutants (not part of CI).
 *
 * Stryker cannot test every mutant of the two folders on a small machine
 * (thousands of mutants, hours), so this script:
 *
 * 1. lists every mutant Stryker's instrumenter makes in every .ts file of the
 *    two folders (the same mutators and settings a run uses), grouped by the
 *    code they change: a node (`a < b`) carries one to four mutants (`<=`,
 *    `>=`, `true`, `false`). The nodes are the sampling frame, because a
 *    Stryker run can select a node's mutants exactly, but not one of them;
 * 2. draws a simple random sample of N nodes without replacement, from a
 *    seeded generator (same seed, same source: same sample);
 * 3. runs Stryker (the settings of stryker.config.json, concurrency 1) on the
 *    sampled nodes only: each is named by its exact location, and an
 *    ignorer (scripts/mutation-sample-ignorer.mjs) leaves out the mutants
 *    inside a sampled node that spans lines (an emptied block);
 * 4. estimates the score, killed / (killed + survived + no coverage) over
 *    every mutant, as the ratio of the sampled nodes' sums (a cluster
 *    sample), with its standard error from the spread between nodes and a
 *    95 % interval of 1.96 standard errors.
 *
 *   node scripts/mutation-sample.mjs plan  [--seed S] [--size N]   the sample and what a run would test
 *   node scripts/mutation-sample.mjs run   [--seed S] [--size N]   plan, then run Stryker on it
 *   node scripts/mutation-sample.mjs score [--seed S] [--size N]   the estimate from the run's report
 *
 * The tests are the engine and queue test files that need no child process,
 * outside server or property search (SAMPLE_TESTS below): a mutant only they
 * miss may still be killed by the rest of the suite, so the estimate is a
 * lower bound for the whole suite. MUTATION_TIMEOUT_MINUTES bounds the run as
 * for scripts/mutation.sh; a run stopped by it is scored from the mutants it
 * recorded, and says so (those are not a random subset of the sample).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Instrumenter } from "@stryker-mutator/instrumenter";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const FOLDERS = ["runtime/engine", "runtime/queue"];
const SAMPLE_TESTS = [
  "test/engine/formats.test.ts",
  "test/engine/engine-reopen.test.ts",
  "test/engine/engine-faults.test.ts",
  "test/engine/engine-group-commit.test.ts",
  "test/engine/engine-incremental.test.ts",
  "test/engine/engine-reader.test.ts",
  "test/engine/store-changing.test.ts",
  "test/queue/pure.test.ts",
  "test/queue/enqueue-claim.test.ts",
  "test/queue/settlement.test.ts",
  "test/queue/edges.test.ts",
  "test/queue/kv-views.test.ts",
  "test/queue/lease-cancel-wake.test.ts",
  "test/queue/payload-offload.test.ts",
  "test/queue/ack-claiming-next.test.ts",
  "test/queue/admission.test.ts",
];

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} takes a positive integer, got ${process.argv[i + 1]}`);
  return n;
}

/** mulberry32: a small seeded generator, enough to draw a sample reproducibly. */
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const quiet = {
  isTraceEnabled: () => false,
  isDebugEnabled: () => false,
  isInfoEnabled: () => false,
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
  fatal() {},
};

/** Every mutant of the two folders, in file and position order. */
async function frame() {
  const files = FOLDERS.flatMap((d) =>
    readdirSync(join(root, d))
      .filter((f) => f.endsWith(".ts"))
      .sort()
      .map((f) => `${d}/${f}`),
  );
  const input = files.map((name) => ({ name, content: readFileSync(join(root, name), "utf8"), mutate: true }));
  const { mutants } = await new Instrumenter(quiet).instrument(input, { plugins: null, ignorers: [], excludedMutations: [] });
  return { files, mutants: [...mutants].sort((a, b) => a.fileName.localeCompare(b.fileName) || Number(a.id) - Number(b.id)) };
}

function draw(all, size, seed) {
  const random = generator(seed);
  const pool = [...all];
  const n = Math.min(size, pool.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

const locKey = (file, loc, mutator, replacement) => `${file}:${loc.start.line}:${loc.start.column}-${loc.end.line}:${loc.end.column}|${mutator}|${replacement}`;
/** Stryker's mutate range: lines from 1, columns from 0 (the instrumenter's lines count from 0). */
const range = (m) => `${m.fileName}:${m.location.start.line + 1}:${m.location.start.column}-${m.location.end.line + 1}:${m.location.end.column}`;
/** The node a mutant changes, as the ignorer names it. */
const node = (m) => `${m.fileName}:${m.location.start.line}:${m.location.start.column}-${m.location.end.line}:${m.location.end.column}`;

const pct = (x) => `${(100 * x).toFixed(1)} %`;

async function plan(seed, size) {
  const { files, mutants } = await frame();
  const clusters = new Map();
  for (const m of mutants) clusters.set(node(m), [...(clusters.get(node(m)) ?? []), m]);
  const nodes = draw([...clusters.keys()], size, seed);
  const sample = nodes.map((n) => ({ node: n, mutants: clusters.get(n) }));
  const tested = sample.reduce((n, c) => n + c.mutants.length, 0);
  console.log(`frame: ${clusters.size} mutated nodes carrying ${mutants.length} mutants, in ${files.length} files (${FOLDERS.join(", ")})`);
  console.log(`sample: ${nodes.length} nodes, seed ${seed}, from ${new Set(sample.map((c) => c.mutants[0].fileName)).size} files, carrying ${tested} mutants`);
  return { sample, name: `sample-${seed}-${size}` };
}

function score(sample, name) {
  const out = join(root, "reports/mutation", name);
  const results = new Map();
  let complete = false;
  if (existsSync(`${out}.json`)) {
    const report = JSON.parse(readFileSync(`${out}.json`, "utf8"));
    for (const [file, f] of Object.entries(report.files)) {
      for (const m of f.mutants) {
        // The report counts lines and columns from 1; the instrumenter from 0 (lines) and 0 (columns).
        const loc = {
          start: { line: m.location.start.line - 1, column: m.location.start.column - 1 },
          end: { line: m.location.end.line - 1, column: m.location.end.column - 1 },
        };
        results.set(locKey(file, loc, m.mutatorName, m.replacement), m.status);
      }
    }
    complete = true;
  } else if (existsSync(`${out}.events`)) {
    for (const f of readdirSync(`${out}.events`).filter((n) => n.endsWith("-onMutantTested.json"))) {
      const m = JSON.parse(readFileSync(join(`${out}.events`, f), "utf8"));
      const file = relative(root, resolve(root, m.fileName));
      // Counted as the instrumenter counts, or from 1 as in the report: either matches only its own mutant.
      const shifted = {
        start: { line: m.location.start.line - 1, column: m.location.start.column - 1 },
        end: { line: m.location.end.line - 1, column: m.location.end.column - 1 },
      };
      results.set(locKey(file, m.location, m.mutatorName, m.replacement), m.status);
      results.set(locKey(file, shifted, m.mutatorName, m.replacement), m.status);
    }
  } else throw new Error(`no report of run ${name}: run it first (node scripts/mutation-sample.mjs run)`);
  const counts = {};
  const survivors = [];
  const per = [];
  for (const c of sample) {
    let k = 0;
    let v = 0;
    for (const m of c.mutants) {
      const status = results.get(locKey(m.fileName, m.location, m.mutatorName, m.replacement)) ?? "NotTested";
      counts[status] = (counts[status] ?? 0) + 1;
      if (status === "Killed" || status === "Timeout") k++;
      if (["Killed", "Timeout", "Survived", "NoCoverage"].includes(status)) v++;
      if (status === "Survived" || status === "NoCoverage")
        survivors.push(`  ${status.padEnd(10)} ${range(m)} ${m.mutatorName}: ${m.replacement.split("\n")[0].slice(0, 80)}`);
    }
    per.push([k, v]);
  }
  const killed = per.reduce((n, [k]) => n + k, 0);
  const valid = per.reduce((n, [, v]) => n + v, 0);
  if (valid === 0) {
    console.log(`run ${name}: no sampled mutant has a verdict (the run failed or stopped before testing any); nothing to estimate`);
    process.exitCode = 1;
    return;
  }
  const n = per.length;
  const r = killed / valid;
  // The ratio estimator's variance (a simple random sample of clusters; the frame is large, so no finite-population correction).
  const meanValid = valid / n;
  const spread = per.reduce((sum, [k, v]) => sum + (k - r * v) ** 2, 0) / (n - 1);
  const se = Math.sqrt(spread / n) / meanValid;
  console.log(`run ${name}: ${complete ? "complete" : "STOPPED before the end: scored from the mutants it recorded, not a random subset"}`);
  console.log(`statuses of the ${sample.reduce((t, c) => t + c.mutants.length, 0)} mutants of the ${n} sampled nodes: ${JSON.stringify(counts)}`);
  console.log(`score (all): ${pct(r)}, standard error ${pct(se)}, 95 % interval ${pct(Math.max(0, r - 1.96 * se))} to ${pct(Math.min(1, r + 1.96 * se))}`);
  console.log(`  (${killed} killed of ${valid} mutants with a verdict; ignored (static) mutants and errors left out)`);
  console.log(`surviving sampled mutants:\n${survivors.join("\n")}`);
}

const command = process.argv[2];
const seed = option("seed", 20261201);
const size = option("size", 30);
if (!["plan", "run", "score"].includes(command)) {
  console.error("usage: node scripts/mutation-sample.mjs plan|run|score [--seed S] [--size N]");
  process.exit(2);
}
const { sample, name } = await plan(seed, size);
if (command === "plan") for (const c of sample) console.log(`  ${range(c.mutants[0])} ${c.mutants.map((m) => m.mutatorName).join(", ")}`);
if (command === "run") {
  const out = join(root, "reports/mutation", name);
  mkdirSync(dirname(out), { recursive: true });
  rmSync(`${out}.json`, { force: true });
  writeFileSync(`${out}.nodes.json`, JSON.stringify(sample.map((c) => c.node)));
  const base = JSON.parse(readFileSync(join(root, "stryker.config.json"), "utf8"));
  delete base.$schema;
  const config = {
    ...base,
    plugins: [...base.plugins, "./scripts/mutation-sample-ignorer.mjs"],
    ignorers: ["sampled-only"],
    reporters: ["clear-text", "progress-append-only", "json", "event-recorder"],
    jsonReporter: { fileName: `${out}.json` },
    eventReporter: { baseDir: `${out}.events` },
    // The first run of every test with coverage; a loaded machine needs more than the default 5 minutes.
    dryRunTimeoutMinutes: 15,
  };
  writeFileSync(`${out}.stryker.json`, JSON.stringify(config, null, 2));
  const seconds = 60 * Number(process.env.MUTATION_TIMEOUT_MINUTES ?? 30);
  const mutate = sample.map((c) => range(c.mutants[0])).join(",");
  const res = spawnSync("timeout", [String(seconds), "npx", "stryker", "run", `${out}.stryker.json`, "--concurrency", "1", "--mutate", mutate], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, MUTATION_TESTS: SAMPLE_TESTS.join(" "), MUTATION_SAMPLE_NODES: `${out}.nodes.json` },
  });
  console.log(`stryker exited with ${res.status ?? res.signal}`);
}
if (command === "run" || command === "score") score(sample, name);
