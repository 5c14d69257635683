/**
 * @module CPU of `Engine.get` of absent keys that all share one key-run
 * filter hash (FNV-1a from its usual start, test/support/colliding-keys.ts)
 * against absent keys that do not, in one checkout: the state holds 1 of the
 * crafted keys in each of its key runs (and 40,000 ordinary keys per run),
 * so with a fixed start every crafted lookup passes every run's filter and
 * searches the run. Run checkouts alternately:
 *
 *   npx tsx bench/key-run-collisions.ts <checkout>
 *
 * Env: RUNS (key runs, 12), LOOKUPS (per round, 200000), ROUNDS (5).
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { collidingKeys } from "../test/support/colliding-keys.js";

type Module = typeof import("../runtime/index.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a checkout");
const { Engine, MemoryStore, WriteBatch }: Module = await import(pathToFileURL(join(dir, "runtime/index.ts")).href);
const RUNS = Number(process.env.RUNS ?? 12);
const LOOKUPS = Number(process.env.LOOKUPS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

const crafted = collidingKeys(16, "u/");
const engine = await Engine.open(new MemoryStore(), { checkpointWalBytes: 0, checkpointWalObjects: 0 });
const value = new Uint8Array(8);
for (let r = 0; r < RUNS; r++) {
  // 40,000 keys per round: past the 32,768 at which the memtable freezes into a run.
  for (let b = 0; b < 40; b++) {
    const batch = new WriteBatch();
    for (let i = 0; i < 1000; i++) batch.put(`k/${r}/${String(b * 1000 + i).padStart(8, "0")}`, value);
    if (b === 0) batch.put(crafted[r] as string, value);
    await engine.commit(batch);
  }
}
const absentCrafted = crafted.slice(RUNS, RUNS + 4096);
const absentPlain = Array.from({ length: 4096 }, (_, i) => `u/${String(i).padStart(18, "0")}`);
const time = (keys: string[]) => {
  const c0 = process.cpuUsage();
  let found = 0;
  for (let n = 0; n < LOOKUPS; n++) if (engine.get(keys[n & 4095] as string) !== undefined) found++;
  const u = process.cpuUsage(c0);
  if (found !== 0) throw new Error("an absent key was found");
  return (((u.user + u.system) / LOOKUPS) * 1000).toFixed(0);
};
const plain: string[] = [];
const craftedNs: string[] = [];
for (let r = 0; r < ROUNDS; r++) {
  plain.push(time(absentPlain));
  craftedNs.push(time(absentCrafted));
}
console.log(`key runs ${engine.stats.keyRuns}; ns CPU per get of an absent key: plain ${plain.join(" / ")}; crafted ${craftedNs.join(" / ")}`);
await engine.close();
