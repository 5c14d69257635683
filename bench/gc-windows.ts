/**
 * @module The collector in each window of the side-by-side workload
 * (bench/peer-window.ts): scavenges and mark-compacts, their pauses, and
 * the bytes they copied: what survived a scavenge in the young generation
 * and what was promoted to the old one. A scavenge's cost is what survives
 * it, not what was allocated; the bytes do not move with the machine's
 * load, the pauses do (the collector's helper threads wait for a core).
 *
 * Runs `node --import tsx --trace-gc-nvp bench/peer-window.ts` with MARKS=1
 * in a child process (the flag is the bench's: the library runs with
 * Node's defaults) and sorts V8's lines into slices: "window n" is the
 * measured drive (N_TP runs of M steps, CONC in flight, a fresh store),
 * "after n" the close, the next window's open and its untimed runs. The
 * child inherits the environment (WINDOWS, N_TP, CONC, M, STORE=memory |
 * local, SOURCES=<checkout> for another tree's sources).
 *
 * Per slice: scavenges, mark-compacts (and the incremental marking steps
 * that led to them), pause ms of each kind, and per 1,000 steps of the
 * measured windows bytes promoted and bytes survived in the young
 * generation (`promoted=`, `new_space_survived=` of the scavenges). The
 * summary is over the windows from FIRST (default 2: the first windows
 * still compile); the windows' bytes per step decide (with N_TP=1000 a
 * window holds about ten scavenges, so the one that straddles its start
 * weighs little). Also over cycles: a window with the slice before it (the
 * last store's close, this one's open and untimed runs), which counts a
 * scavenge between two windows too, but also the peer bench's own work
 * after a window (its figures), and a full collection there now and then.
 *
 * Run: `WINDOWS=8 npx tsx bench/gc-windows.ts`; `STORE=local` for a
 * LocalStore; `TRACE=<file>` keeps the raw trace.
 */
import { loadAverageText } from "./support/load-average.js";
import { sliceOfMark, tracePeerWindow } from "./support/traced-windows.js";

const WINDOWS = process.env.WINDOWS ?? "8";
const FIRST = Number(process.env.FIRST ?? 2);
const steps = Number(process.env.N_TP ?? 200) * Number(process.env.M ?? 10);
/** Steps of a window's untimed runs, in the slice after the one before it. */
const primeSteps = Number(process.env.PRIME ?? 10) * Number(process.env.M ?? 10);
const loadBefore = loadAverageText();
const trace = tracePeerWindow(["--trace-gc-nvp"], WINDOWS);

interface Slice {
  name: string;
  window: boolean;
  scavenges: number;
  scavengeMs: number;
  markCompacts: number;
  markCompactMs: number;
  /** Other pauses: incremental marking steps and finalizations (`gc=mmc` and the like). */
  otherMs: number;
  promoted: number;
  survived: number;
}
const slices: Slice[] = [];
const slice = (name: string, window: boolean): Slice => {
  const s: Slice = { name, window, scavenges: 0, scavengeMs: 0, markCompacts: 0, markCompactMs: 0, otherMs: 0, promoted: 0, survived: 0 };
  slices.push(s);
  return s;
};
let at = slice("start-up", false);
const field = (line: string, name: string) => Number(new RegExp(`(?:^|\\s)${name}=([0-9.]+)`).exec(line)?.[1] ?? 0);
for (const line of trace.split("\n")) {
  const opened = sliceOfMark(line);
  if (opened !== undefined) {
    at = slice(opened.name, opened.window);
    continue;
  }
  const kind = /\sgc=(\w+)/.exec(line)?.[1];
  if (kind === undefined) continue;
  const pause = field(line, "pause");
  if (kind === "s") {
    at.scavenges++;
    at.scavengeMs += pause;
    at.promoted += field(line, "promoted");
    at.survived += field(line, "new_space_survived");
  } else if (kind === "ms" || kind === "mc") {
    at.markCompacts++;
    at.markCompactMs += pause;
  } else at.otherMs += pause;
}

const k = (b: number) => (b / 1024).toFixed(0);
const per1k = (x: number) => (x / (steps / 1000)).toFixed(1);
console.log(
  `peer-window under --trace-gc-nvp, ${process.env.SOURCES ?? "this tree"}: STORE=${process.env.STORE ?? "memory"} WINDOWS=${WINDOWS} N_TP=${process.env.N_TP ?? 200} CONC=${process.env.CONC ?? 50} M=${process.env.M ?? 10} (${steps} steps a window); load ${loadBefore} before, ${loadAverageText()} after; node ${process.version}`,
);
console.log(
  "| slice | scavenges | scavenge ms | mark-compacts | mark-compact ms | other pauses ms | promoted KB | survived KB | promoted B/step | survived B/step |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const s of slices)
  console.log(
    `| ${s.name} | ${s.scavenges} | ${s.scavengeMs.toFixed(1)} | ${s.markCompacts} | ${s.markCompactMs.toFixed(1)} | ${s.otherMs.toFixed(1)} | ${k(s.promoted)} | ${k(s.survived)} | ${s.window ? (s.promoted / steps).toFixed(0) : "-"} | ${s.window ? (s.survived / steps).toFixed(0) : "-"} |`,
  );
const measured = slices.filter((s) => s.window && Number(s.name.slice(7)) >= FIRST);
const sum = (f: (s: Slice) => number) => measured.reduce((a, s) => a + f(s), 0);
const n = measured.length;
const perK = (f: (s: Slice) => number) => per1k(sum(f) / n);
console.log(
  `windows ${FIRST}-${FIRST + n - 1}, per 1,000 steps: ${perK((s) => s.scavenges)} scavenges (${perK((s) => s.scavengeMs)} ms), ${perK((s) => s.markCompacts)} mark-compacts (${perK((s) => s.markCompactMs)} ms, other pauses ${perK((s) => s.otherMs)} ms); promoted ${k(sum((s) => s.promoted) / n / (steps / 1000))} KB, survived ${k(sum((s) => s.survived) / n / (steps / 1000))} KB (${(sum((s) => s.promoted) / n / steps).toFixed(0)} and ${(sum((s) => s.survived) / n / steps).toFixed(0)} B a step)`,
);
// Cycles: "after n-1" (the close before, this window's open and untimed runs) with "window n".
const cycles = measured.map((w) => {
  const i = slices.indexOf(w);
  const before = slices[i - 1]!;
  return [before, w];
});
const csum = (f: (s: Slice) => number) => cycles.reduce((a, [b, w]) => a + f(b!) + f(w!), 0);
const cSteps = cycles.length * (steps + primeSteps);
const cPerK = (f: (s: Slice) => number) => (csum(f) / (cSteps / 1000)).toFixed(2);
console.log(
  `cycles ${FIRST}-${FIRST + n - 1} (each window with the slice before it, ${steps + primeSteps} steps), per 1,000 steps: ${cPerK((s) => s.scavenges)} scavenges (${cPerK((s) => s.scavengeMs)} ms), ${cPerK((s) => s.markCompacts)} mark-compacts (${cPerK((s) => s.markCompactMs)} ms, other pauses ${cPerK((s) => s.otherMs)} ms); promoted ${(csum((s) => s.promoted) / cSteps).toFixed(0)} B a step, survived ${(csum((s) => s.survived) / cSteps).toFixed(0)} B a step`,
);
