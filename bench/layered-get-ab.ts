/**
 * CPU of LayeredState reads (`get` of present and absent keys over several
 * runs, the `#locate` search) in two versions of the module, alternating
 * rounds in one process: this checkout's and a baseline copied beside it
 * (`git show <commit>:runtime/engine/layered-state.ts > runtime/engine/layered-state-base.ts`).
 *
 *   npx tsx bench/layered-get-ab.ts [keys=200000] [rounds=16]
 */
import { LayeredState as Current } from "../runtime/engine/layered-state.js";
import { median } from "./support/percentile.js";

const keys = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 16);
// The baseline is copied in for the measurement, not committed: a path held in a variable is not resolved by the typecheck.
const basePath = "../runtime/engine/layered-state-base.js";
const { LayeredState: Base } = (await import(basePath)) as { LayeredState: typeof Current };

function build(C: typeof Current): Current {
  const s = new C({ memtableKeys: Math.ceil(keys / 8), mergeRatio: 1000, maxRuns: 64 });
  const v = new Uint8Array(16);
  for (let i = 0; i < keys; i++) s.set(`job/${String(i).padStart(9, "0")}`, v);
  s.freeze();
  return s;
}

function readAll(s: Current): number {
  let found = 0;
  for (let i = 0; i < keys; i++) if (s.get(`job/${String(i).padStart(9, "0")}`) !== undefined) found++;
  for (let i = 0; i < keys; i++) if (s.get(`gone/${String(i).padStart(9, "0")}`) !== undefined) found++;
  return found;
}

const states = { current: build(Current), base: build(Base) };
console.log(`runs: current ${states.current.runCount}, base ${states.base.runCount}`);
const cpu: Record<keyof typeof states, number[]> = { current: [], base: [] };
for (let r = 0; r < rounds; r++) {
  for (const which of (r % 2 === 0 ? ["current", "base"] : ["base", "current"]) as (keyof typeof states)[]) {
    const t = process.cpuUsage();
    const found = readAll(states[which]);
    const used = process.cpuUsage(t);
    if (found !== keys) throw new Error(`found ${found} of ${keys}`);
    if (r >= 2) cpu[which].push(((used.user + used.system) / (2 * keys)) * 1000);
  }
}
for (const which of ["base", "current"] as const) console.log(`${which}: median ${median(cpu[which]).toFixed(0)} ns CPU per get (${cpu[which].length} rounds)`);
