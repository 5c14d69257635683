/**
 * @module What V8's compilers and collector do in each window of the
 * side-by-side workload (bench/peer-window.ts): functions marked for
 * optimization and compiled, deoptimizations (function, reason and, from
 * `--trace-deopt-verbose`, the source position in tsx's output of the
 * module, which is one line: `runtime/x.ts:1:<column>`), scavenges and full
 * collections. These are counts of the code's own behaviour, not times, so
 * they hold on a loaded machine.
 *
 * Runs `node --import tsx --trace-opt --trace-deopt-verbose --trace-gc
 * bench/peer-window.ts` with MARKS=1 (window marks in the same stdout) in a
 * child process and sorts the trace lines into windows: "window n" is the
 * measured drive, "after n" the close, the next window's open and its
 * untimed runs. The child inherits the environment (WINDOWS, N_TP, CONC,
 * SOURCES=<checkout> for another tree's sources).
 *
 * Run: `WINDOWS=11 npx tsx bench/jit-windows.ts`; DEOPTS=1 lists each
 * deoptimization; COMPILED=1 names the functions compiled in each window;
 * TRACE=<file> keeps the raw trace.
 */
import { loadAverageText } from "./support/load-average.js";
import { sliceOfMark, tracePeerWindow } from "./support/traced-windows.js";

const WINDOWS = process.env.WINDOWS ?? "11";
const trace = tracePeerWindow(["--trace-opt", "--trace-deopt-verbose", "--trace-gc"], WINDOWS);

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
}
const slices: Slice[] = [];
const slice = (name: string): Slice => {
  const s: Slice = { name, marked: 0, compiled: [], deopts: [], scavenges: 0, fullGcs: 0 };
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
  if (line.startsWith("[marking")) at.marked++;
  else if (line.startsWith("[completed compiling")) at.compiled.push(fnOf(line));
  else if (line.startsWith("[bailout (kind")) {
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
console.log("| slice | marked for optimization | compiled | deoptimized (in runtime/) | scavenges | full collections |");
console.log("|---|---|---|---|---|---|");
for (const s of slices)
  console.log(`| ${s.name} | ${s.marked} | ${s.compiled.length} | ${s.deopts.length} (${inRuntime(s)}) | ${s.scavenges} | ${s.fullGcs} |`);
const from = slices.findIndex((s) => s.name === "after warm-up");
const rest = from < 0 ? [] : slices.slice(from);
console.log(
  `from the warm-up's end: ${rest.reduce((a, s) => a + s.deopts.length, 0)} deoptimizations (${rest.reduce((a, s) => a + inRuntime(s), 0)} at a position in runtime/), ${rest.reduce((a, s) => a + s.compiled.length, 0)} compilations`,
);
if (process.env.DEOPTS === "1") {
  for (const s of slices) for (const d of s.deopts) console.log(`${s.name}: ${d.fn} | ${d.reason} | ${d.at}`);
}
if (process.env.COMPILED === "1") {
  for (const s of slices) if (s.compiled.length > 0) console.log(`${s.name}: ${s.compiled.join(", ")}`);
}
