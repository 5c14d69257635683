/**
 * @module What V8's compilers and collector do in each window of the
 * side-by-side workload (bench/peer-window.ts): functions marked for
 * optimization and compiled, deoptimizations (function, reason and, from
 * `--trace-deopt-verbose`, the source position in tsx's output of the
 * module, which is one line: `runtime/x.ts:1:<column>`), scavenges and full
 * collections. These are counts of the code's own behaviour, not times, so
 * they hold on a loaded machine.
 *
 * With `--trace-opt-verbose`, V8 prints a line each time a function not yet
 * optimized uses up its interrupt budget (67,584 bytes of its bytecode run
 * in the interpreter or in baseline code) without enough ticks to be
 * marked (3 plus one per 150 bytes of its bytecode): these "unoptimized
 * ticks" per slice count the work done below TurboFan, load or not, and
 * name who did it (`TICKS=1`: each slice's functions by their ticks, with
 * the ticks each needs). The compiles' own time, main thread (prepare and
 * finalize) and background (the concurrent compile), is summed from the
 * trace's "took" lines: times, so the load's.
 *
 * Runs `node --import tsx --trace-opt --trace-deopt-verbose --trace-gc
 * bench/peer-window.ts` with MARKS=1 (window marks in the same stdout) in a
 * child process and sorts the trace lines into windows: "window n" is the
 * measured drive, "after n" the close, the next window's open and its
 * untimed runs. The child inherits the environment (WINDOWS, N_TP, CONC,
 * SOURCES=<checkout> for another tree's sources).
 *
 * Run: `WINDOWS=11 npx tsx bench/jit-windows.ts`; TICKS=1 lists each slice's
 * unoptimized ticks by function; DEOPTS=1 lists each
 * deoptimization; COMPILED=1 names the functions compiled in each window;
 * TRACE=<file> keeps the raw trace.
 */
import { loadAverageText } from "./support/load-average.js";
import { sliceOfMark, tracePeerWindow } from "./support/traced-windows.js";

const WINDOWS = process.env.WINDOWS ?? "11";
const trace = tracePeerWindow(["--trace-opt-verbose", "--trace-deopt-verbose", "--trace-gc"], WINDOWS);

interface Deopt {
  fn: string;
  reason: string;
  at: string;
}
interface Slice {
  name: string;
  marked: number;
  compiled: string[];
  deopts: Deopt[];
  scavenges: number;
  fullGcs: number;
  /** Interrupt budgets used up by functions not yet optimized, by "name (needs n)". */
  ticks: Map<string, number>;
  compileMainMs: number;
  compileBackgroundMs: number;
}
const slices: Slice[] = [];
const slice = (name: string): Slice => {
  const s: Slice = { name, marked: 0, compiled: [], deopts: [], scavenges: 0, fullGcs: 0, ticks: new Map(), compileMainMs: 0, compileBackgroundMs: 0 };
  slices.push(s);
  return s;
};
let at = slice("start-up");
let open: Deopt | undefined;
const fnOf = (line: string) => /<JSFunction (\S*)/.exec(line)?.[1] ?? "?";
for (const line of trace.split("\n")) {
  const opened = sliceOfMark(line);
  if (opened !== undefined) {
    at = slice(opened.name);
    continue;
  }
  const tick = /^\[not yet optimizing ([^,]*), not enough ticks: \d+\/(\d+)/.exec(line);
  if (tick !== null) {
    const k = `${tick[1] || "(anonymous)"} (needs ${tick[2]})`;
    at.ticks.set(k, (at.ticks.get(k) ?? 0) + 1);
  } else if (line.startsWith("[marking 0x")) at.marked++;
  else if (line.startsWith("[completed compiling")) {
    at.compiled.push(fnOf(line));
    const took = /took ([\d.]+), ([\d.]+), ([\d.]+) ms/.exec(line);
    if (took !== null) {
      at.compileMainMs += Number(took[1]) + Number(took[3]);
      at.compileBackgroundMs += Number(took[2]);
    }
  } else if (line.startsWith("[bailout (kind")) {
    open = { fn: fnOf(line), reason: /reason: ([^)]*)\)/.exec(line)?.[1] ?? "?", at: "?" };
    at.deopts.push(open);
  } else if (open !== undefined && line.includes(";;; deoptimize at")) {
    const where = /deoptimize at <([^>]*)>/.exec(line)?.[1] ?? "?";
    open.at = where.replace(/^file:\/\/.*?\/(runtime|bench)\//, "$1/");
    open = undefined;
  } else if (line.includes("Scavenge")) at.scavenges++;
  else if (line.includes("Mark-Compact") || line.includes("Mark-sweep")) at.fullGcs++;
}

// The bench's own functions and node's internals deoptimize too; what the runtime's code does is counted apart.
const inRuntime = (s: Slice) => s.deopts.filter((d) => d.at.startsWith("runtime/")).length;
console.log(
  `peer-window ${process.env.SOURCES ?? "this tree"}, STORE=${process.env.STORE ?? "memory"} COHORTS=${process.env.COHORTS ?? "default"} WINDOWS=${WINDOWS}; load ${loadAverageText()}; node ${process.version}`,
);
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
console.log(
  "| slice | marked for optimization | compiled | deoptimized (in runtime/) | unoptimized ticks | compile ms main / background | scavenges | full collections |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const s of slices)
  console.log(
    `| ${s.name} | ${s.marked} | ${s.compiled.length} | ${s.deopts.length} (${inRuntime(s)}) | ${sum(s.ticks)} | ${s.compileMainMs.toFixed(1)} / ${s.compileBackgroundMs.toFixed(1)} | ${s.scavenges} | ${s.fullGcs} |`,
  );
const from = slices.findIndex((s) => s.name === "after warm-up");
const rest = from < 0 ? [] : slices.slice(from);
console.log(
  `from the warm-up's end: ${rest.reduce((a, s) => a + s.deopts.length, 0)} deoptimizations (${rest.reduce((a, s) => a + inRuntime(s), 0)} at a position in runtime/), ${rest.reduce((a, s) => a + s.compiled.length, 0)} compilations`,
);
if (process.env.DEOPTS === "1") {
  for (const s of slices) for (const d of s.deopts) console.log(`${s.name}: ${d.fn} | ${d.reason} | ${d.at}`);
}
if (process.env.TICKS === "1") {
  for (const s of slices) {
    if (s.ticks.size === 0 || s.name === "start-up") continue;
    const top = [...s.ticks].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} x${n}`);
    console.log(`${s.name} ticks: ${top.join(", ")}`);
  }
}
if (process.env.COMPILED === "1") {
  for (const s of slices) if (s.compiled.length > 0) console.log(`${s.name}: ${s.compiled.join(", ")}`);
}
