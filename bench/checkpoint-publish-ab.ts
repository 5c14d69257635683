/**
 * @module Small checkpoints on LocalStore from several checkouts in one
 * process, alternating checkpoint by checkpoint (the order reversed every
 * other round), so the machine's drift hits each alike: the process's CPU
 * (main thread and thread pool) and the wall time per checkpoint of one
 * small commit, where a manifest's publish (and the listing that checks it
 * once it landed) weighs the most.
 *
 * Usage: `npx tsx bench/checkpoint-publish-ab.ts <checkout> [<checkout> ...]`,
 * each a directory whose `runtime/` is measured. Env: N (300 checkpoints each).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Engine } from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";

const N = Number(process.env.N ?? 300);
const checkouts = process.argv.slice(2).map((c) => resolve(c));
if (checkouts.length === 0) throw new Error("usage: npx tsx bench/checkpoint-publish-ab.ts <checkout> [<checkout> ...]");

type Runtime = typeof import("../runtime/index.js");
const dirs: string[] = [];
const engines: { engine: Engine; mod: Runtime }[] = [];
for (const c of checkouts) {
  const mod = (await import(pathToFileURL(join(c, "runtime/index.ts")).href)) as Runtime;
  const dir = mkdtempSync(join(tmpdir(), "bench-checkpoint-ab-"));
  dirs.push(dir);
  const engine = await mod.Engine.open(new mod.LocalStore(dir), { checkpointWalObjects: 0, checkpointWalBytes: 0 });
  engines.push({ engine, mod });
}
const ms: number[][] = checkouts.map(() => []);
const cpuUs = checkouts.map(() => 0);
console.log(`load average at start: ${loadAverageText()}`);
for (let i = 0; i < N; i++) {
  const order = engines.map((_, k) => k);
  if (i % 2 === 1) order.reverse();
  for (const k of order) {
    const { engine, mod } = engines[k]!;
    await engine.commit(new mod.WriteBatch().put(`k/${i % 50}`, new Uint8Array(64).fill(i & 0xff)));
    const cpu = process.cpuUsage();
    const t = performance.now();
    await engine.checkpoint();
    ms[k]!.push(performance.now() - t);
    const used = process.cpuUsage(cpu);
    cpuUs[k]! += used.user + used.system;
  }
}
for (const [k, c] of checkouts.entries()) {
  const sorted = ms[k]!.sort((a, b) => a - b);
  console.log(
    `${c}: CPU ${(cpuUs[k]! / N).toFixed(0)} µs/checkpoint, wall median ${percentile(sorted, 50).toFixed(2)} ms, p90 ${percentile(sorted, 90).toFixed(2)} ms`,
  );
}
console.log(`load average at end: ${loadAverageText()}`);
for (const { engine } of engines) await engine.close();
for (const d of dirs) rmSync(d, { recursive: true, force: true });
