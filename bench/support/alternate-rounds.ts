/**
 * @module The A/B benchmarks' rounds: each round measures every checkout
 * once, in alternating order (so none always runs after the others'
 * garbage), prints the round's figures with the load average beside them,
 * and at the end the median of each checkout's rounds after the first two
 * (warm-up). One figure per checkout and round.
 */
import { loadAverageText } from "./load-average.js";
import { median } from "./percentile.js";

/** Rounds left out of the medians: the first ones warm the code up. */
const WARM_UP_ROUNDS = 2;

/**
 * Runs `rounds` rounds of `measure(i)` for each of `dirs` (A first in even
 * rounds, last in odd ones), printing each round as
 * `round N (load ...): A: x, B: y`; returns each checkout's figures in
 * round order.
 */
export async function alternateRounds(dirs: readonly string[], rounds: number, measure: (i: number) => number | Promise<number>): Promise<number[][]> {
  const figures: number[][] = dirs.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
    const line: string[] = [];
    for (const i of order) {
      const x = await measure(i);
      figures[i]!.push(x);
      line.push(`${dirs[i]}: ${x.toFixed(0)}`);
    }
    console.log(`round ${r + 1} (load ${loadAverageText()}): ${line.join(", ")}`);
  }
  return figures;
}

/** Prints `median after 2 rounds <dir>: <median> <unit>` for each checkout. */
export function printMedians(dirs: readonly string[], figures: readonly number[][], unit: string): void {
  for (const [i, d] of dirs.entries())
    console.log(`median after ${WARM_UP_ROUNDS} rounds ${d}: ${median(figures[i]!.slice(WARM_UP_ROUNDS)).toFixed(0)} ${unit}`);
}
