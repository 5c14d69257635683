/**
 * @module The record A/B benchmarks' rounds: for each kind of record and
 * each checkout, CPU per call over `calls` calls, round by round with the
 * checkouts in alternating order (so none always runs after the others'
 * garbage); then, per kind and checkout, the minimum, 25th percentile and
 * median of the rounds after the warm-up, and with two checkouts the
 * second's time over the first's, round by round.
 */
import { loadAverageText } from "./load-average.js";

/** A kind of record: its name, and one call of it on checkout `i`. */
export type Kind = readonly [name: string, call: (i: number) => void];

/** ns of CPU (user + system) per call of `call(i)`, over `calls` calls. */
function cpuPerCall(i: number, call: (i: number) => void, calls: number): number {
  const t0 = process.cpuUsage();
  for (let n = 0; n < calls; n++) call(i);
  const t = process.cpuUsage(t0);
  return ((t.user + t.system) * 1000) / calls;
}

/** Runs the rounds and prints the figures; `verb` names a call in them ("encode", "decode"), `sink` keeps the results alive. */
export function runKindRounds(opts: {
  dirs: readonly string[];
  kinds: readonly Kind[];
  rounds: number;
  calls: number;
  warmRounds: number;
  verb: string;
  sink: () => number;
}): void {
  const { dirs, kinds, rounds, calls, warmRounds, verb } = opts;
  const times: number[][][] = kinds.map(() => dirs.map(() => []));
  for (let k = 0; k < rounds; k++) {
    const order = k % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
    for (const [kind, [, call]] of kinds.entries()) {
      for (const i of order) {
        const ns = cpuPerCall(i, call, calls);
        if (k >= warmRounds) times[kind]![i]!.push(ns);
      }
    }
  }
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!;
  console.log(`rounds ${rounds}, ${calls} ${verb}s each, load ${loadAverageText()}, node ${process.version}, sink ${opts.sink() % 10}`);
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
