/**
 * @module CPU of walking a segment's entries, of two or more compiled
 * checkouts, round by round in one process (so each runs under the same
 * load): `readSegmentEntries` over whole segments (a writer's open of a
 * segment without a usable key section) and `readBlockEntries` over each of
 * their blocks (a compaction's windows). The segments are built once, by
 * the first checkout, of SEGMENTS segments of ENTRIES entries shaped like
 * the queue's (keys of about 40 bytes, values of 64 bytes, 64 KiB blocks).
 * Reported: CPU ns per entry (user + system) per round and checkout, and
 * the median of the rounds after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `ROUNDS=10 npx tsx bench/segment-walk-ab.ts <checkout A> <checkout B>`.
 */
import { median } from "./support/percentile.js";
import { loadCheckout } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

type Format = typeof import("../runtime/engine/segment-format.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const ROUNDS = env("ROUNDS", 10);
const SEGMENTS = env("SEGMENTS", 8);
const ENTRIES = env("ENTRIES", 40_000);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const formats: Format[] = [];
for (const d of dirs) formats.push(await loadCheckout<Format>(d, "dist/runtime/engine/segment-format.js"));

const value = new Uint8Array(64).fill(7);
const segments = Array.from({ length: SEGMENTS }, (_, s) => {
  const b = new formats[0]!.SegmentBuilder();
  for (let i = 0; i < ENTRIES; i++) b.add(`j/q/01J${String(s).padStart(3, "0")}${String(i).padStart(9, "0")}ABCDEFGHJKMN`, value);
  return b.finish();
});
const blocksOf = segments.map((seg) => {
  const size = seg.byteLength;
  return formats[0]!.decodeSegmentIndex("seg", seg.subarray(formats[0]!.segmentIndexStart("seg", seg.subarray(size - 44), size)), size);
});

let sink = 0;
const onEntry = (_b: Buffer, keyAt: number, keyLen: number, valueAt: number, valueLen: number) => {
  sink += keyAt + keyLen + valueAt + valueLen;
};
const entries = SEGMENTS * ENTRIES;

function measure(F: Format): { whole: number; blocks: number } {
  let cpu0 = process.cpuUsage();
  for (const seg of segments) F.readSegmentEntries("seg", seg, onEntry);
  let cpu = process.cpuUsage(cpu0);
  const whole = ((cpu.user + cpu.system) * 1000) / entries;
  cpu0 = process.cpuUsage();
  segments.forEach((seg, s) => {
    for (const [i, info] of blocksOf[s]!.entries()) F.readBlockEntries("seg", i, info, seg.subarray(info.offset, info.offset + info.length), onEntry);
  });
  cpu = process.cpuUsage(cpu0);
  return { whole, blocks: ((cpu.user + cpu.system) * 1000) / entries };
}

console.log(`ROUNDS=${ROUNDS} SEGMENTS=${SEGMENTS} ENTRIES=${ENTRIES} load ${loadAverageText()}`);
const results = dirs.map(() => ({ whole: [] as number[], blocks: [] as number[] }));
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < dirs.length; i++) {
    const m = measure(formats[i]!);
    results[i]!.whole.push(m.whole);
    results[i]!.blocks.push(m.blocks);
    console.log(`round ${r} ${dirs[i]}: whole segments ${m.whole.toFixed(1)} ns/entry, blocks alone ${m.blocks.toFixed(1)} ns/entry`);
  }
}
for (let i = 0; i < dirs.length; i++) {
  const w = results[i]!.whole.slice(2);
  const b = results[i]!.blocks.slice(2);
  console.log(`${dirs[i]}: whole segments median ${median(w).toFixed(1)} ns/entry, blocks alone median ${median(b).toFixed(1)} ns/entry`);
}
console.log(`load at end ${loadAverageText()} (${sink > 0 ? "walked" : "nothing walked"})`);
