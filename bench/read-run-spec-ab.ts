/**
 * @module CPU per read of a run's spec and options as a submission reads
 * them (`readRunSpec`: each field read once into a copy, through
 * `readOptions`), of two or more compiled checkouts, alternating round by
 * round in one process. The spec has an input, a run id and typical
 * options (headers, a priority, attempts); every fourth one a flow. A
 * round times CALLS reads per checkout (`process.cpuUsage`, user + system);
 * reported per round, then the median of the rounds after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `CALLS=500000 ROUNDS=10 npx tsx bench/read-run-spec-ab.ts <checkout A> <checkout B>`.
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadCheckout } from "./support/step-workload.js";

type Fields = typeof import("../runtime/workflow/runs/run-option-fields.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 500_000);
const ROUNDS = env("ROUNDS", 10);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Fields[] = [];
for (const d of dirs) mods.push(await loadCheckout<Fields>(d, "dist/runtime/workflow/runs/run-option-fields.js"));

const input = new Uint8Array(32);
let sink = 0;

function measure(m: Fields): number {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const options =
      i % 4 === 0
        ? { headers: { tenant: "acme" }, priority: 100, maxAttemptsPerStep: 5, flow: { rule: "r", concurrencyKey: "k" } }
        : { headers: { tenant: "acme" }, priority: 100, maxAttemptsPerStep: 5 };
    const spec = m.readRunSpec({ runId: `run-${i}`, input, options }) as { runId: string };
    sink += spec.runId.length;
  }
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / CALLS;
}

console.log(`readRunSpec CPU ns per read; CALLS=${CALLS} ROUNDS=${ROUNDS}`);
printMedians(dirs, await alternateRounds(dirs, ROUNDS, (i) => measure(mods[i]!)), "ns per read");
if (sink === 0) console.log("");
