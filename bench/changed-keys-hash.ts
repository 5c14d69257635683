/**
 * @module CPU of the checkpoint's changed keys (changed-keys.ts) in one
 * checkout: 1M sets of queue-like keys into a fresh map (each key new, as
 * a fill makes them), then 65,536 keys made to share one FNV-1a hash from
 * its usual start (two blocks of six letters reaching one state, chained
 * 16 times). Run the checkouts alternately, each several times:
 *
 *   npx tsx bench/changed-keys-hash.ts <checkout>
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { collidingKeys } from "../test/support/colliding-keys.js";

type Module = typeof import("../runtime/engine/changed-keys.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a checkout");
const { ChangedKeys }: Module = await import(pathToFileURL(join(dir, "runtime/engine/changed-keys.ts")).href);

const cpuMs = (from: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
};

const N = 1_000_000;
const queueKeys = Array.from({ length: N }, (_, i) => `q/jobs/01HF7YAT00FN46E22Q${String(i).padStart(8, "0")}`);
const value = new Uint8Array(1);
const fills: string[] = [];
for (let round = 0; round < 3; round++) {
  const c0 = process.cpuUsage();
  const m = new ChangedKeys<Uint8Array>();
  for (const k of queueKeys) m.set(k, value);
  fills.push(cpuMs(c0).toFixed(0));
}
const crafted = collidingKeys(16, "u/");
const c1 = process.cpuUsage();
const m = new ChangedKeys<Uint8Array>();
for (const k of crafted) m.set(k, value);
console.log(`1M queue keys: ${fills.join(" / ")} ms CPU; 65,536 crafted keys: ${cpuMs(c1).toFixed(0)} ms CPU (${m.size} keys)`);
