/**
 * @module What a difference of two callgrind counts is made of: the
 * optimizing compiler, the collector, V8's builtins (inline caches, the
 * interpreter's handlers), JIT-compiled code, the rest. Tells a per-run
 * figure taken between two N (bench/submit-instructions.ts) that still
 * holds the JIT's warm-up from one made of the runs' own work.
 *
 * Run: keep both outputs (`--callgrind-out-file=<a>.cg`, `<b>.cg` instead
 * of /dev/null), then `npx tsx bench/callgrind-parts.ts <a>.cg <b>.cg <runs between them>`;
 * prints instructions per run by part, and the top functions of the difference with `TOP=n`.
 * A window of bench/callgrind-gated.ts is a count of its own: give `-` as
 * `<a>.cg` and the window's units (steps, acks) as the runs.
 */
import { execFileSync } from "node:child_process";

const [a, b, runs] = process.argv.slice(2);
if (a === undefined || b === undefined || runs === undefined) throw new Error("usage: callgrind-parts.ts <a.cg> <b.cg> <runs between them>");
const n = Number(runs);
const TOP = Number(process.env.TOP ?? 0);

/** Self instructions per function, from `callgrind_annotate`. */
function selfCounts(file: string): Map<string, number> {
  const out = execFileSync("callgrind_annotate", ["--threshold=100", file], { encoding: "utf8", maxBuffer: 1 << 28 });
  const counts = new Map<string, number>();
  for (const line of out.split("\n")) {
    const m = /^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$/.exec(line);
    if (m === null || m[2]!.startsWith("PROGRAM TOTALS")) continue;
    const name = m[2]!.trim();
    counts.set(name, (counts.get(name) ?? 0) + Number(m[1]!.replaceAll(",", "")));
  }
  return counts;
}

function partOf(name: string): string {
  if (/compiler::|maglev|turboshaft/i.test(name)) return "optimizing compiler";
  if (/Scaveng|Marking|MarkCompact|heap::|Heap::|Sweeper|Evacuat|Worklist|RememberedSet|IterateObjectCache|BodyDescriptor/.test(name)) return "collector";
  if (/^\?\?\?:0x/.test(name)) return "JIT-compiled code";
  if (name.includes("Builtins_")) return "builtins (inline caches, interpreter handlers, ...)";
  if (/interpreter::|Parser|parsing|Bytecode|baseline/i.test(name)) return "parser, bytecode, baseline compiler";
  if (name.includes("libc.so")) return "libc";
  if (name.includes("v8::internal")) return "V8 runtime, other";
  return "other";
}

const before = a === "-" ? new Map<string, number>() : selfCounts(a);
const after = selfCounts(b);
const parts = new Map<string, number>();
const fns: [string, number][] = [];
for (const name of new Set([...before.keys(), ...after.keys()])) {
  const d = ((after.get(name) ?? 0) - (before.get(name) ?? 0)) / n;
  parts.set(partOf(name), (parts.get(partOf(name)) ?? 0) + d);
  fns.push([name, d]);
}
let total = 0;
for (const [part, d] of [...parts].sort((x, y) => y[1] - x[1])) {
  total += d;
  console.log(`${Math.round(d).toLocaleString("en").padStart(12)}  ${part}`);
}
console.log(`${Math.round(total).toLocaleString("en").padStart(12)}  per run in all (${n} runs between the two counts)`);
for (const [name, d] of fns.sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`${Math.round(d).toLocaleString("en").padStart(12)}  ${name.slice(0, 140)}`);
