/**
 * @module LocalStore reads from several checkouts in one process: a get of
 * a small object and a ranged read into a caller's buffer, in batches that
 * alternate between checkouts (the order reversed every other round), so
 * the machine's drift hits each alike. Per read: the process's CPU (main
 * thread and thread pool, read after a pause that lets a close still in
 * flight land in its own batch) and the latency's p50.
 *
 * Usage: `npx tsx bench/local-get-ab.ts <checkout> [<checkout> ...]`, each a
 * directory whose `runtime/` is measured. Env: ROUNDS (12), PER (250 reads
 * per batch), BYTES (4096).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import type { LocalStore } from "../runtime/index.js";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";

const ROUNDS = Number(process.env.ROUNDS ?? 12);
const PER = Number(process.env.PER ?? 250);
const body = new Uint8Array(Number(process.env.BYTES ?? 4096)).fill(7);
const args = process.argv.slice(2);
if (args.length === 0) throw new Error("usage: npx tsx bench/local-get-ab.ts <checkout> [<checkout> ...]");

const stores: LocalStore[] = [];
for (const c of args) {
  const mod = (await import(pathToFileURL(join(resolve(c), "runtime/index.ts")).href)) as typeof import("../runtime/index.js");
  stores.push(new mod.LocalStore(mkdtempSync(join(tmpdir(), "bench-get-ab-"))));
}
const ms: number[][] = args.map(() => []);
const cpuUs = args.map(() => 0);
const into = new Uint8Array(1024);

try {
  for (const s of stores) await s.put("seg/0001", body);
  console.log(`local-get-ab: ROUNDS=${ROUNDS} PER=${PER} BYTES=${body.length} load ${loadAverageText()}`);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [...stores.keys()] : [...stores.keys()].reverse();
    for (const k of order) {
      const store = stores[k]!;
      await sleep(20);
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < PER; i++) {
        const t = performance.now();
        if (i % 2 === 0) await store.get("seg/0001");
        else await store.getRangeInto("seg/0001", 1024, into);
        ms[k]!.push(performance.now() - t);
      }
      // A close started and not awaited lands in this batch's CPU, not the next one's.
      await sleep(20);
      const cpu = process.cpuUsage(cpu0);
      cpuUs[k]! += cpu.user + cpu.system;
    }
  }
  const reads = ROUNDS * PER;
  args.forEach((c, k) => {
    const xs = ms[k]!.sort((a, b) => a - b);
    console.log(`${c}: p50 ${percentile(xs, 50).toFixed(3)} ms, p90 ${percentile(xs, 90).toFixed(3)} ms, CPU ${(cpuUs[k]! / reads).toFixed(1)} µs per read`);
  });
  console.log(`load at end ${loadAverageText()}`);
} finally {
  for (const s of stores) rmSync(s.root, { recursive: true, force: true });
}
