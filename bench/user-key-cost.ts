/**
 * @module CPU per caller KV key made into its engine key, in one built
 * checkout: validated and prefixed on every use (`validateKvKey` then
 * `userKey`, as before queue/user-keys) against kept (`keptUserEngineKey`),
 * for a key string handed on from step to step ("carried") and for one
 * built afresh by concatenation per use ("fresh"). Each result's character
 * at 40 is read, as the memtable's first comparison would, so a
 * concatenation's flattening is counted where it happens.
 *
 * Run: `npm run build`, then `npx tsx bench/user-key-cost.ts <checkout>`.
 */
import { loadCheckout } from "./support/step-workload.js";

type Names = typeof import("../runtime/queue/names.js");
type Keys = typeof import("../runtime/queue/keys.js");
type UserKeys = typeof import("../runtime/queue/user-keys.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
// Typed where it is declared: `validateKvKey` is an assertion function.
const names: Names = await loadCheckout<Names>(dir, "dist/runtime/queue/names.js");
const { userKey } = await loadCheckout<Keys>(dir, "dist/runtime/queue/keys.js");
const { keptUserEngineKey } = await loadCheckout<UserKeys>(dir, "dist/runtime/queue/user-keys.js");

const runIds = Array.from({ length: 50 }, (_, i) => `01HF7YAT00FN46E22Q8791Y${String(i).padStart(3, "0")}`);
const carried = runIds.map((r) => `workflow/runs/workflow-steps/${[...r].join("")}`);
const each = (k: string) => {
  names.validateKvKey(k);
  return userKey(k);
};
const N = 500_000;
let sink = 0;
for (let round = 0; round < 10; round++) {
  const line: string[] = [];
  for (const [name, f] of [
    ["validated and prefixed per use", each],
    ["kept", keptUserEngineKey],
  ] as const) {
    for (const mode of ["carried", "fresh"] as const) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < N; i++) {
        const key = mode === "carried" ? carried[i % 50]! : `workflow/runs/workflow-steps/${runIds[i % 50]}`;
        sink += f(key).charCodeAt(40);
      }
      const c = process.cpuUsage(c0);
      line.push(`${name} ${mode} ${(((c.user + c.system) * 1000) / N).toFixed(0)} ns`);
    }
  }
  if (round >= 2) console.log(line.join(" | "));
}
if (sink === 0) console.log("");
