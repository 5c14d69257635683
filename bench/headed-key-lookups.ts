/**
 * @module The memtable's head look-up of a step's four keys under the
 * workflow's declared prefixes (run record, step pointer, history entry,
 * step pointer again), CALLS times: by the search of the declared bounds
 * (`MODE=search`, `KeyHeads.headOf`), by keys that carry their family's
 * head (`MODE=hint`, key-family.ts: the queue's kept keys and history
 * prefix), or with no heads declared (`MODE=none`). For instruction
 * counts under callgrind, which the machine's load does not move: run it
 * at two CALLS per mode and divide the difference of the counts by the
 * calls between them. Bundled, so tsx's compiles are not counted:
 * `npx esbuild bench/headed-key-lookups.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/headed-key-lookups.mjs`,
 * `npm run build`, then
 * `MODE=<search|hint|none> CALLS=<200000|1000000> valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/.out/headed-key-lookups.mjs <checkout>`.
 * Without valgrind it prints the CPU per call (a rough figure).
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type KeyHeadsModule = typeof import("../runtime/engine/key-heads.js");
type KeyFamilyModule = typeof import("../runtime/engine/key-family.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const MODE = process.env.MODE ?? "hint";
const CALLS = Number(process.env.CALLS ?? 1_000_000);
const { KeyHeads } = await loadCheckout<KeyHeadsModule>(dir, "dist/runtime/engine/key-heads.js");

const heads = MODE === "none" ? KeyHeads.NONE : KeyHeads.of(["u/workflow/runs/", "u/workflow/steps/", "u/workflow/history/"]);
const run = "01JABCDEFGHJKMNPQRSTV00042";
// As the queue makes them: the run's two kept keys, and its history prefix with a step's suffix.
const keys = [`u/workflow/runs/steps/${run}`, `u/workflow/steps/steps/${run}`, `u/workflow/history/steps/${run}/000007`, `u/workflow/steps/steps/${run}`];

let sum = 0;
const started = process.cpuUsage();
if (MODE === "hint") {
  const { KeyFamily, hintedHead } = await loadCheckout<KeyFamilyModule>(dir, "dist/runtime/engine/key-family.js");
  const runAt = new KeyFamily(keys[0]!).key("");
  const pointerAt = new KeyFamily(keys[1]!).key("");
  const history = new KeyFamily(`u/workflow/history/steps/${run}/`).key("000007");
  const headed = [runAt, pointerAt, history, pointerAt];
  for (let i = 0; i < CALLS; i++) {
    const k = headed[i & 3]!;
    // As the map does: the hint's head, else the search.
    const h = hintedHead(heads, k.key, k);
    sum += h >= 0 ? h : heads.headOf(k.key);
  }
} else {
  for (let i = 0; i < CALLS; i++) sum += heads.headOf(keys[i & 3]!);
}
const used = process.cpuUsage(started);
console.log(`${dir}: MODE=${MODE} CALLS=${CALLS} load ${loadAverageText()}`);
console.log(`${(((used.user + used.system) * 1000) / CALLS).toFixed(1)} ns per call (sum ${sum})`);
