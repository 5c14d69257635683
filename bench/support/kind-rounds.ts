/**
 * @module The record A/B benchmarks' rounds: for each kind of record and
 * each checkout, CPU per call over R calls, round by round with the
 * checkouts in alternating order (so none always runs after the others'
 * garbage); then, per kind and checkout, the minimum, 25th percentile and
 * median of the rounds after the warm-up, and with two checkouts the
 * second's time over the first's, round by round.
 *
 * Env: ROUNDS (60), R calls per round (20,000); the checkouts are the
 * command's arguments. The first four rounds warm the code up.
 */
import { loadAverageText } from "./load-average.js";

/** A kind of record: its name, and one call of it on checkout `i`. */
export type Kind = readonly [name: string, call: (i: number) => void];

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 60);
const CALLS = env("R", 20_000);
const WARM_ROUNDS = 4;

/** The checkouts named on the command line (at least one). */
export function checkoutArgs(): string[] {
  const dirs = process.argv.slice(2);
  if (dirs.length === 0) throw new Error("name one or more checkouts");
  return dirs;
}

/** ns of CPU (user + system) per call of `call(i)`, over `calls` calls. */
function cpuPerCall(i: number, call: (i: number) => void, calls: number): number {
  const t0 = process.cpuUsage();
  for (let n = 0; n < calls; n++) call(i);
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / calls;
}

/** Runs the rounds and prints the figures; `verb` names a call in them ("encode", "decode"), `sink` keeps the results alive. */
export function runKindRounds(opts: { dirs: readonly string[]; kinds: readonly Kind[]; verb: string; sink: () => number }): void {
  const { dirs, kinds, verb } = opts;
  const times: number[][][] = kinds.map(() => dirs.map(() => []));
  for (let k = 0; k < ROUNDS; k++) {
    const order = k % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
    for (const [kind, [, call]] of kinds.entries()) {
      for (const i of order) {
        const ns = cpuPerCall(i, call, CALLS);
        if (k >= WARM_ROUNDS) times[kind]![i]!.push(ns);
      }
    }
  }
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
  console.log(`rounds ${ROUNDS}, ${CALLS} ${verb}s each, load ${loadAverageText()}, node ${process.version}, sink ${opts.sink() % 10}`);
  for (const [kind, [name]] of kinds.entries()) {
    dirs.forEach((d, i) => {
      const t = times[kind]![i]!;
      console.log(`${name}, ${d}: ns CPU per ${verb}: min ${q(t, 0).toFixed(1)}, p25 ${q(t, 0.25).toFixed(1)}, median ${q(t, 0.5).toFixed(1)}`);
    });
    if (dirs.length === 2) {
      const ratios = times[kind]![0]!.map((a, k) => times[kind]![1]![k]! / a);
      console.log(
        `${name}, second / first, round by round: median ${q(ratios, 0.5).toFixed(3)}, p25 ${q(ratios, 0.25).toFixed(3)}, p75 ${q(ratios, 0.75).toFixed(3)}`,
      );
    }
  }
}
