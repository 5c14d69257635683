/**
 * @module The cost of a settled step's history key as its settlement uses
 * it: built (`stepHistoryKey`), checked as a caller key, prefixed as an
 * engine key and flattened (as the memtable's first comparison does), over
 * 2,000 keys of runs' first steps, for the checkout named in WHICH (the
 * first or second argument; sources loaded through tsx, no build needed).
 * Prints CPU ns per key over REPS passes; on a busy machine time it under
 * callgrind, one process per checkout at two REPS, and divide the
 * difference of their instruction counts by the difference of keys built.
 *
 * Run: `REPS=300 npx tsx bench/step-history-key.ts <checkout A> <checkout B>`, or
 * `WHICH=0 REPS=10 valgrind --tool=callgrind node --import tsx bench/step-history-key.ts <A> <B>`
 * and the same with REPS=40, and with `WHICH=1`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadAverageText } from "./support/load-average.js";

const dirs = process.argv.slice(2);
if (dirs.length !== 2) throw new Error("name two checkouts");
const REPS = Number(process.env.REPS ?? 300);
const WHICH = process.env.WHICH;
const KEYS = 2000;

type KeyOf = (q: string, runId: string, step: number) => string;
const load = async (dir: string) => {
  const history = (await import(pathToFileURL(resolve(dir, "runtime/workflow/runs/history-records.ts")).href)) as { stepHistoryKey: KeyOf };
  const names = (await import(pathToFileURL(resolve(dir, "runtime/queue/names.ts")).href)) as { validateKvKey: (k: string) => void };
  const keys = (await import(pathToFileURL(resolve(dir, "runtime/queue/keys.ts")).href)) as { userKey: (k: string) => string };
  return { ...history, ...names, ...keys };
};
const mods = await Promise.all(dirs.map(load));

// Seeded, so every process builds the same keys.
let seed = 1;
const next = () => (seed = (seed * 48271) % 2147483647);
const runIds = Array.from({ length: KEYS / 10 }, () => `01J${next().toString(36).toUpperCase().padEnd(23, "X")}`);

function time(i: number): void {
  const m = mods[i]!;
  let sum = 0;
  const c0 = process.cpuUsage();
  for (let k = 0; k < REPS; k++) {
    for (const runId of runIds) {
      for (let step = 0; step < 10; step++) {
        const key = m.stepHistoryKey("workflow-steps", runId, step);
        m.validateKvKey(key);
        const engineKey = m.userKey(key);
        sum += engineKey.charCodeAt(engineKey.length - 1);
      }
    }
  }
  const c = process.cpuUsage(c0);
  console.log(`${dirs[i]}: ${(((c.user + c.system) * 1000) / (REPS * KEYS)).toFixed(0)} ns CPU per key (checksum ${sum})`);
}

for (const m of mods.slice(1)) {
  for (const runId of runIds) if (m.stepHistoryKey("q", runId, 7) !== mods[0]!.stepHistoryKey("q", runId, 7)) throw new Error("the two checkouts' keys differ");
}
console.log(`REPS=${REPS} keys=${KEYS} WHICH=${WHICH ?? "both"} load ${loadAverageText()}`);
if (WHICH !== undefined) time(Number(WHICH));
else for (let r = 0; r < 3; r++) for (let i = 0; i < mods.length; i++) time(i);
