/**
 * @module Benchmark: what the argument checks of `taquba/codegen`'s exported
 * functions cost and save, in CPU time (user + system), alternating the
 * stage called directly (the code before the checks) with the checked entry:
 * - `analyse` given a 10 MB string instead of an array of spec inputs (the
 *   stage spread it into ten million characters before failing);
 * - `generate` of the shop fixture, a valid call, where the checks are overhead.
 *
 * Run: npx tsx bench/codegen-entry-args.ts [rounds]
 */
import { readFileSync } from "node:fs";
import { analyse, generate } from "../codegen/index.js";
import { analyse as analyseStage, generate as generateStage } from "../codegen/generate.js";

const rounds = Number(process.argv[2] ?? 5);
const huge = "x".repeat(10 * 1024 * 1024);
const file = "test/codegen/fixtures/shop/shop.taquba.yaml";
const inputs = [{ file, source: readFileSync(file, "utf8") }];

/** CPU ms of `run`, which may throw (a refusal is the answer being timed). */
function cpuMs(run: () => unknown): number {
  const started = process.cpuUsage();
  try {
    run();
  } catch {
    // The time to the refusal is what is measured.
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
}

const rows: string[] = [];
generateStage(inputs);
generate(inputs);
// The valid calls first: the 10 MB spreads leave garbage whose collection would land in them.
for (let r = 0; r < rounds; r++) {
  const stage = cpuMs(() => generateStage(inputs));
  const entry = cpuMs(() => generate(inputs));
  rows.push(`round ${r + 1}: generate(shop) stage ${stage.toFixed(1)} ms, entry ${entry.toFixed(1)} ms`);
}
for (let r = 0; r < rounds; r++) {
  const stage = cpuMs(() => analyseStage(huge as never));
  const entry = cpuMs(() => analyse(huge as never));
  rows.push(`round ${r + 1}: analyse(10 MB string) stage ${stage.toFixed(1)} ms, entry ${entry.toFixed(3)} ms`);
}
console.log(rows.join("\n"));
