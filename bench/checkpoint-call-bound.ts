/**
 * How long `Engine.checkpoint()` takes while one loop commits a key at a
 * time and a checkpoint is due at every WAL object, and how many
 * checkpoints were published during each call.
 *
 * Usage: DIR=<empty dir> CALLS=10 npx tsx bench/checkpoint-call-bound.ts
 */
import { Engine, LocalStore, WriteBatch } from "taquba";

const dir = process.env.DIR;
if (!dir) throw new Error("set DIR to an empty directory");
const calls = Number(process.env.CALLS ?? "10");
const engine = await Engine.open(new LocalStore(dir), { checkpointWalObjects: 1, maxSegmentRuns: 3 });
let stop = false;
const value = new Uint8Array(64);
const loop = (async () => {
  for (let i = 0; !stop; i++) await engine.commit(new WriteBatch().put(`k/${i % 5000}`, value));
})();
await new Promise((r) => setTimeout(r, 500));
for (let c = 0; c < calls; c++) {
  const before = { checkpoints: engine.stats.checkpoints, compactions: engine.stats.compactions };
  const t = performance.now();
  await engine.checkpoint();
  const ms = performance.now() - t;
  console.log(
    `call ${c + 1}: ${ms.toFixed(0)} ms, checkpoints published meanwhile ${engine.stats.checkpoints - before.checkpoints}, compactions ${engine.stats.compactions - before.compactions}`,
  );
}
stop = true;
await loop;
await engine.close();
