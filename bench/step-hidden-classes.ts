/**
 * @module Hidden classes (V8 maps) the step workload creates per workflow
 * step, in a compiled checkout: an object whose hidden class is made for it
 * alone costs the map's allocation and leaves every property lookup on it
 * megamorphic. Counted from V8's map log (`--log-maps`), exact at any load.
 *
 * Two child processes run the side-by-side workload
 * (bench/support/step-workload.ts, MemoryStore, 10-step runs, 10 in flight)
 * after the same warm-up, one for RUNS runs and one for twice that; the
 * difference of their map creations, over the steps the second ran more, is
 * what a step creates (start-up, loading and warm-up cancel out).
 *
 * `TYPED=1` runs the same workload through the typed path instead
 * (bench/support/typed-step-workload.ts: a `WorkflowDispatcher`, a typed
 * step context and a transition per delivery).
 *
 * Run: `npm run build` in the checkout, then
 * `RUNS=200 npx tsx bench/step-hidden-classes.ts <checkout>` (and with `TYPED=1`).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN, type Taquba } from "./support/step-workload.js";
import { openTypedStepWorkload } from "./support/typed-step-workload.js";

const RUNS = Number(process.env.RUNS ?? 200);
const WARM = Number(process.env.WARM ?? 100);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");

if (process.env.STEP_HIDDEN_CLASSES_CHILD !== undefined) {
  // In a child: drive the workload and leave.
  const T = await loadCheckout<Taquba>(dir);
  const w = process.env.TYPED === "1" ? await openTypedStepWorkload(T, dir, new T.MemoryStore()) : await openStepWorkload(T, new T.MemoryStore());
  await w.drive(WARM, 10);
  await w.drive(Number(process.env.STEP_HIDDEN_CLASSES_CHILD), 10);
  process.exit(0);
}

/** Map creations and transitions of one child that runs `runs` runs after the warm-up. */
function mapsOf(runs: number, scratch: string): { created: number; transitions: number } {
  const log = join(scratch, `maps-${runs}.log`);
  execFileSync(
    process.execPath,
    ["--log-maps", `--logfile=${log}`, "--no-logfile-per-isolate", "--import", "tsx", fileURLToPath(import.meta.url), resolve(dir!)],
    { env: { ...process.env, STEP_HIDDEN_CLASSES_CHILD: String(runs) }, stdio: "inherit" },
  );
  let created = 0;
  let transitions = 0;
  for (const line of readFileSync(log, "utf8").split("\n")) {
    if (line.startsWith("map-create,")) created++;
    else if (line.startsWith("map,Transition,")) transitions++;
  }
  rmSync(log);
  return { created, transitions };
}

const scratch = mkdtempSync(join(tmpdir(), "step-hidden-classes-"));
try {
  const a = mapsOf(RUNS, scratch);
  const b = mapsOf(2 * RUNS, scratch);
  const steps = RUNS * STEPS_PER_RUN;
  console.log(`${dir}: ${process.env.TYPED === "1" ? "typed path, " : ""}RUNS=${RUNS} WARM=${WARM} load ${loadAverageText()}`);
  console.log(
    `maps created per step ${((b.created - a.created) / steps).toFixed(3)}, transitions logged per step ${((b.transitions - a.transitions) / steps).toFixed(3)}`,
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
