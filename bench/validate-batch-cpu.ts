/**
 * @module CPU of `readBatchOps` (wal-format.ts; `validateBatchOps` in
 * checkouts before it took the ops into fresh objects), which every commit
 * runs, in one checkout: 1M batches of three ops (two puts, a delete) with
 * queue-like keys. Run checkouts alternately:
 *
 *   npx tsx bench/validate-batch-cpu.ts <checkout>
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";

type Module = typeof import("../runtime/engine/wal-format.js");
type Op = Parameters<Module["readBatchOps"]>[0][number];
type Read = (ops: readonly Op[]) => unknown;

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a checkout");
const mod = (await import(pathToFileURL(join(dir, "runtime/engine/wal-format.ts")).href)) as Record<string, Read | undefined>;
const read = mod.readBatchOps ?? mod.validateBatchOps;
if (read === undefined) throw new Error("the checkout has neither readBatchOps nor validateBatchOps");

const value = new Uint8Array(64);
const batches: Op[][] = Array.from({ length: 1000 }, (_, i) => [
  { kind: "put", key: `q/jobs/01HF7YAT00FN46E22Q${String(i).padStart(8, "0")}`, value },
  { kind: "put", key: `c/steps/01HF7YAT00FN46E22Q${String(i).padStart(8, "0")}`, value },
  { kind: "delete", key: `p/steps/00005/${String(i).padStart(12, "0")}` },
]);
const rounds: string[] = [];
for (let r = 0; r < 5; r++) {
  const c0 = process.cpuUsage();
  for (let n = 0; n < 1000; n++) for (const b of batches) read(b);
  const u = process.cpuUsage(c0);
  rounds.push(((u.user + u.system) / 1000).toFixed(0));
}
console.log(`1M batches of 3 ops: ${rounds.join(" / ")} ms CPU`);
