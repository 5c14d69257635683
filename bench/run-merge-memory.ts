/**
 * What a key-run merge allocates beside its output, in two or more
 * checkouts: the bookkeeping that lets an entry killed after its copy kill
 * the copy too (a map of 4 bytes per input entry, or for a run rewritten
 * alone a bit per entry and a count per block), counted as the array-buffer
 * bytes the merge's constructor adds (the output's resizable buffer is not
 * among them). Each case builds runs of sequential keys, kills every other
 * entry (a half-drained queue's runs), then starts the merge.
 *
 *   npx tsx bench/run-merge-memory.ts <checkout> [<checkout> ...] [entries=4000000]
 */
import { resolve } from "node:path";
import type * as KeyRunModule from "../runtime/engine/key-run.js";
import type * as RunMergeModule from "../runtime/engine/run-merge.js";

const args = process.argv.slice(2);
const last = args.at(-1);
const entries = last !== undefined && /^\d+$/.test(last) ? Number(args.pop()) : 4_000_000;
if (args.length === 0 || !Number.isSafeInteger(entries) || entries < 2)
  throw new Error("usage: run-merge-memory.ts <checkout> [<checkout> ...] [entries >= 2]");

const key = (i: number) => `p/queue/5/${String(i).padStart(26, "0")}`;

console.log(`run-merge-memory: ${entries.toLocaleString("en-US")} entries in all, every other one killed before the merge starts`);
console.log("| checkout | inputs | array-buffer bytes the merge adds | per input entry |");
console.log("|---|---|---|---|");
for (const dir of args) {
  const kr = (await import(resolve(dir, "runtime/engine/key-run.ts"))) as typeof KeyRunModule;
  const rm = (await import(resolve(dir, "runtime/engine/run-merge.ts"))) as typeof RunMergeModule;
  for (const inputs of [1, 2]) {
    const builders = Array.from({ length: inputs }, () => new kr.KeyRunBuilder());
    for (let i = 0; i < entries; i++) builders[i % inputs]!.add(key(i), Uint8Array.of(1));
    const layers = builders.map((b) => rm.layerOf(b.finish()));
    for (const l of layers) for (let i = 0; i < l.run.count; i += 2) l.live.kill(i, Math.floor(i / kr.BLOCK_ENTRIES));
    (globalThis as { gc?: () => void }).gc?.();
    const before = process.memoryUsage().arrayBuffers;
    const merge = new rm.RunMerge(layers);
    const added = process.memoryUsage().arrayBuffers - before;
    console.log(`| ${dir} | ${inputs} | ${added.toLocaleString("en-US")} | ${(added / entries).toFixed(3)} B |`);
    merge.step(1);
  }
}

console.log("");
console.log("| checkout | dead share | input run | output run | output / input |");
console.log("|---|---|---|---|---|");
for (const dir of args) {
  const kr = (await import(resolve(dir, "runtime/engine/key-run.ts"))) as typeof KeyRunModule;
  const rm = (await import(resolve(dir, "runtime/engine/run-merge.ts"))) as typeof RunMergeModule;
  for (const dead of [0.5, 0.75]) {
    const b = new kr.KeyRunBuilder();
    for (let i = 0; i < entries; i++) b.add(key(i), Uint8Array.of(1));
    const input = rm.layerOf(b.finish());
    const killed = Math.floor(entries * dead) + 1;
    for (let i = 0; i < killed; i++) input.live.kill(i, Math.floor(i / kr.BLOCK_ENTRIES));
    const merge = new rm.RunMerge([input]);
    while (merge.step(65_536));
    const out = merge.finish();
    const inBytes = input.run.memoryBytes;
    const outBytes = out?.run.memoryBytes ?? 0;
    console.log(
      `| ${dir} | ${killed.toLocaleString("en-US")} of ${entries.toLocaleString("en-US")} | ${inBytes.toLocaleString("en-US")} B | ${outBytes.toLocaleString("en-US")} B | ${(outBytes / inBytes).toFixed(3)} |`,
    );
  }
}
