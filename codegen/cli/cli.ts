#!/usr/bin/env node
/**
 * @module The `taquba` command line: `taquba codegen [paths...] [options]`.
 *
 * The only place where generation meets the disk. Exit codes: 0 success,
 * 1 spec errors or (with `--check`) drift, 2 bad usage.
 */

import { watch as watchPath, type FSWatcher } from "node:fs";
import { access, readFile } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { hasErrors, renderDiagnostic } from "../analyse/diagnostics.js";
import type { ContractChange } from "../contract/contract-lock.js";
import type { GenerateResult, GenerationCache, SpecInput } from "../generate.js";
import { compareOutput, hasDrift } from "./output-check.js";
import { lockPathFor } from "../contract/contract-lock.js";
import { displayPath, findSpecFiles, readGenerated, readSpecs, SPEC_FILE, syncOutput, writeAtomic } from "./output-files.js";
import { parseStamp, renderStamp, sha256, specsFromHeaders, STAMP_FILE, stampKey, stampMatches, staleSpecs } from "./output-stamp.js";
import { scaffoldFiles } from "./scaffold.js";

// The generator proper (YAML, ajv, ts-morph) loads only when a pass needs it:
// a `--check` that the output stamp answers never does.
const loadGenerator = () => import("../generate.js");
const loadLocks = () => import("../contract/contract-lock.js");

const USAGE = `usage: taquba init [dir]
       taquba codegen [paths...] [--out DIR] [--check] [--watch] [--dry-run] [--scaffold DIR] [--accept-breaking]

  init [dir]     start a project in dir (default: here): an example spec, handlers,
                 a worker and a submit script, npm scripts; then generate the code

  paths          spec files or folders holding *.taquba.yaml (default: schemas/)
  --out DIR      where generated code goes (default: generated/)
  --check        regenerate in memory, print a diff, exit 1 if anything differs
  --watch        regenerate whenever a spec changes; keeps running after errors
  --dry-run      list what would be written, write nothing
  --scaffold DIR write a handler stub per job and workflow into DIR, never overwriting a file
  --accept-breaking
                 update the contract locks (*.taquba.lock.json) despite breaking changes`;

/** Where the CLI prints and which folder relative paths start from. */
export interface CliIo {
  readonly cwd: string;
  out(text: string): void;
  err(text: string): void;
}

const processIo: CliIo = {
  cwd: process.cwd(),
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
};

interface Options {
  readonly paths: string[];
  readonly outDir: string;
  readonly check: boolean;
  readonly watch: boolean;
  readonly dryRun: boolean;
  readonly scaffold: string | undefined;
  readonly acceptBreaking: boolean;
}

interface LockState {
  readonly file: string;
  readonly content: string;
  readonly existing: string | undefined;
  readonly changes: readonly ContractChange[];
}

/** Compares each package's lock as generated now with the committed one. */
async function lockStates(locks: GenerateResult["locks"], cwd: string): Promise<LockState[]> {
  const { diffLocks, parseLock } = await loadLocks();
  return Promise.all(
    locks.map(async (l) => {
      const existing = await readFile(resolve(cwd, l.file), "utf8").catch(() => undefined);
      const before = existing === undefined ? undefined : parseLock(existing);
      return { file: l.file, content: l.content, existing, changes: before === undefined ? [] : diffLocks(before, l.lock) };
    }),
  );
}

function toPosix(p: string): string {
  return p.split(sep).join("/");
}

/** Whether the output stamp shows, without regenerating, that output and locks are current. */
async function stampProvesUpToDate(stampPath: string, opts: Options, io: CliIo, inputs: readonly SpecInput[]): Promise<boolean> {
  const stamp = parseStamp(await readFile(stampPath, "utf8").catch(() => undefined));
  if (stamp === undefined) return false;
  const key = await stampKey(inputs);
  const onDisk = await readGenerated(opts.outDir);
  const read = (file: string) => readFile(resolve(io.cwd, file), "utf8").catch(() => undefined);
  const lockTexts = new Map(await Promise.all(inputs.map(async (i) => [lockPathFor(i.file), await read(lockPathFor(i.file))] as const)));
  return stampMatches(stamp, key, onDisk, lockTexts);
}

/**
 * One generation pass. Returns the exit code. `cache` (kept by `--watch`
 * across passes) lets a pass re-emit only the packages whose spec changed.
 */
async function runOnce(opts: Options, io: CliIo, cache?: GenerationCache): Promise<number> {
  let inputs: SpecInput[];
  try {
    const files = await findSpecFiles(opts.paths);
    if (files.length === 0) {
      io.err(`no spec files (*.taquba.yaml) found in ${opts.paths.map((p) => displayPath(p, io.cwd)).join(", ")}`);
      return 1;
    }
    inputs = await readSpecs(files, io.cwd);
  } catch (e) {
    io.err(`cannot read the specs: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  const stampPath = join(opts.outDir, STAMP_FILE);
  if (opts.check && (await stampProvesUpToDate(stampPath, opts, io, inputs))) {
    io.out(`${displayPath(opts.outDir, io.cwd)} is up to date with ${inputs.length} spec file${inputs.length === 1 ? "" : "s"}`);
    return 0;
  }
  if (opts.check) {
    // A spec edited since the last generation is the usual cause of drift: say so in one line, not as a diff.
    // The generated files name the spec hash they came from; the stamp is the fallback for older output.
    const recorded = specsFromHeaders(await readGenerated(opts.outDir)) ?? parseStamp(await readFile(stampPath, "utf8").catch(() => undefined))?.specs;
    const stale = staleSpecs(recorded, inputs, toPosix(relative(io.cwd, opts.outDir)) || ".");
    if (stale.length > 0) {
      for (const line of stale) io.err(line);
      return 1;
    }
  }
  const { generate } = await loadGenerator();
  const { renderChange } = await loadLocks();
  const result = generate(inputs, cache);
  const sources = new Map(inputs.map((i) => [i.file, i.source]));
  for (const d of result.diagnostics) io.err(renderDiagnostic(d, sources.get(d.file)));
  if (hasErrors(result.diagnostics)) {
    const n = result.diagnostics.filter((d) => d.severity === "error").length;
    io.err(`${n} error${n === 1 ? "" : "s"}; nothing was written`);
    return 1;
  }
  const onDisk = await readGenerated(opts.outDir);
  const drift = compareOutput(result.files, onDisk);
  const outName = displayPath(opts.outDir, io.cwd);
  const locks = await lockStates(result.locks, io.cwd);
  const staleLocks = locks.filter((l) => l.existing !== l.content);
  for (const l of staleLocks) for (const c of l.changes) io.err(`${l.file}: ${renderChange(c)}`);
  if (opts.check) {
    for (const l of staleLocks) io.err(`${l.existing === undefined ? "missing" : "changed"}: ${l.file}`);
    if (staleLocks.length > 0 && !hasDrift(drift)) {
      io.err(`the contract locks are out of date; run \`npm run codegen\` (with --accept-breaking if it reports breaking changes) and commit them`);
      return 1;
    }
    if (!hasDrift(drift)) {
      io.out(`${outName} is up to date with ${inputs.length} spec file${inputs.length === 1 ? "" : "s"}`);
      return 0;
    }
    io.out(drift.diff.trimEnd());
    for (const p of drift.missing) io.err(`missing: ${outName}/${p}`);
    for (const p of drift.changed) io.err(`changed: ${outName}/${p}`);
    for (const p of drift.stale) io.err(`stale:   ${outName}/${p}`);
    io.err(`${outName} is out of date; run \`npm run codegen\` and commit the result`);
    return 1;
  }
  const breaking = locks.flatMap((l) => l.changes.filter((c) => c.breaking));
  if (breaking.length > 0 && !opts.acceptBreaking && !opts.dryRun) {
    io.err(
      `${breaking.length} breaking change${breaking.length === 1 ? "" : "s"} against the committed contract lock; nothing was written. ` +
        `Keep old producers and workers working (add a new job instead), or rerun with --accept-breaking to acknowledge them`,
    );
    return 1;
  }
  if (opts.dryRun) {
    for (const l of staleLocks) io.out(`would ${l.existing === undefined ? "create" : "update"} ${l.file}`);
    for (const p of drift.missing) io.out(`would create ${outName}/${p}`);
    for (const p of drift.changed) io.out(`would update ${outName}/${p}`);
    for (const p of drift.stale) io.out(`would delete ${outName}/${p}`);
    if (!hasDrift(drift)) io.out(`${outName} is up to date; nothing to write`);
  } else {
    if (cache !== undefined) {
      const n = cache.lastEmitted.length;
      io.out(
        `re-emitted ${n} of ${result.packages.length} package${result.packages.length === 1 ? "" : "s"}${n === 0 ? "" : `: ${cache.lastEmitted.join(", ")}`}`,
      );
    }
    const { written, deleted } = await syncOutput(opts.outDir, result.files, onDisk);
    for (const l of staleLocks) await writeAtomic(resolve(io.cwd, l.file), l.content);
    const stamp = renderStamp({
      stampVersion: 1,
      key: await stampKey(inputs),
      files: Object.fromEntries(result.files.map((f) => [f.path, sha256(f.content)])),
      locks: Object.fromEntries(result.locks.map((l) => [l.file, sha256(l.content)])),
      specs: Object.fromEntries(result.packages.map((p) => [p.file, { sha256: sha256(sources.get(p.file) ?? ""), package: p.name }])),
    });
    if ((await readFile(stampPath, "utf8").catch(() => undefined)) !== stamp) await writeAtomic(stampPath, stamp);
    io.out(`${outName}: ${written.length} written, ${deleted.length} deleted, ${result.files.length - written.length} unchanged`);
    if (staleLocks.length > 0) io.out(`contract locks updated: ${staleLocks.map((l) => l.file).join(", ")}`);
  }
  if (opts.scaffold !== undefined) await scaffold(opts, result.packages, io);
  return 0;
}

async function scaffold(opts: Options, packages: Parameters<typeof scaffoldFiles>[0], io: CliIo): Promise<void> {
  const dir = opts.scaffold as string;
  const importPath = toPosix(relative(dir, opts.outDir)) || ".";
  for (const f of scaffoldFiles(packages, importPath)) {
    const target = join(dir, f.path);
    const exists = await access(target).then(
      () => true,
      () => false,
    );
    const name = displayPath(target, io.cwd);
    if (exists) continue;
    if (opts.dryRun) io.out(`would scaffold ${name}`);
    else {
      await writeAtomic(target, f.content);
      io.out(`scaffolded ${name}`);
    }
  }
}

/** Regenerates on every change under the spec paths until `signal` aborts. */
async function runWatch(opts: Options, io: CliIo, signal: AbortSignal): Promise<number> {
  const { GenerationCache } = await loadGenerator();
  const cache = new GenerationCache();
  await runOnce(opts, io, cache);
  let timer: NodeJS.Timeout | undefined;
  let running = Promise.resolve();
  const trigger = () => {
    clearTimeout(timer);
    // Editors write a file in several steps; one pass after they settle.
    timer = setTimeout(() => {
      running = running.then(async () => {
        io.out(`change detected; regenerating`);
        await runOnce(opts, io, cache).catch((e: unknown) => io.err(`generation failed: ${e instanceof Error ? e.message : String(e)}`));
      });
    }, 100);
  };
  // Only spec files matter; this also ignores the lock files the pass itself writes.
  const watchers: FSWatcher[] = opts.paths.map((p) =>
    watchPath(p, { recursive: true }, (_event, name) => {
      if (name === null || SPEC_FILE.test(String(name)) || !/\.lock\.json$/.test(String(name))) trigger();
    }),
  );
  io.out(`watching ${opts.paths.map((p) => displayPath(p, io.cwd)).join(", ")}; press Ctrl-C to stop`);
  await new Promise<void>((done) => signal.addEventListener("abort", () => done(), { once: true }));
  clearTimeout(timer);
  for (const w of watchers) w.close();
  await running;
  return 0;
}

/** Runs the CLI with `argv` (without the node and script entries). Resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIo = processIo, signal?: AbortSignal): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    io.out(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === "init") {
    const { runInit } = await import("./init.js");
    return runInit(rest, io, (args, initIo) => main(args, initIo, signal));
  }
  if (command !== "codegen") {
    io.err(`unknown command "${command}"\n${USAGE}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: [...rest],
      allowPositionals: true,
      options: {
        out: { type: "string" },
        check: { type: "boolean", default: false },
        watch: { type: "boolean", default: false },
        "dry-run": { type: "boolean", default: false },
        scaffold: { type: "string" },
        "accept-breaking": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (e) {
    io.err(`${e instanceof Error ? e.message : String(e)}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    io.out(USAGE);
    return 0;
  }
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(io.cwd, p));
  const opts: Options = {
    paths: (parsed.positionals.length > 0 ? parsed.positionals : ["schemas"]).map(abs),
    outDir: abs(parsed.values.out ?? "generated"),
    check: parsed.values.check,
    watch: parsed.values.watch,
    dryRun: parsed.values["dry-run"],
    scaffold: parsed.values.scaffold === undefined ? undefined : abs(parsed.values.scaffold),
    acceptBreaking: parsed.values["accept-breaking"],
  };
  if (opts.check && (opts.watch || opts.scaffold !== undefined)) {
    io.err(`--check cannot be combined with --watch or --scaffold\n${USAGE}`);
    return 2;
  }
  if (opts.watch) {
    const controller = new AbortController();
    const stop = () => controller.abort();
    signal?.addEventListener("abort", stop, { once: true });
    if (signal === undefined) process.once("SIGINT", stop);
    return runWatch(opts, io, controller.signal);
  }
  return runOnce(opts, io);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`taquba: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
