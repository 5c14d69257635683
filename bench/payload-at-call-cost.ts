/**
 * @module CPU of taking an enqueue's payload at the call, alone, per call:
 * the check a plain payload gets (`payloadAtCall`, no copy), against the
 * copy every payload would get if all were copied (`heldPayload`), for 64 B
 * and 64 KiB payloads, alternating PAIRS times in both orders.
 *
 * Run: `PAIRS=6 N=2000000 npx tsx bench/payload-at-call-cost.ts`.
 */
import { heldPayload, payloadAtCall } from "../runtime/queue/payload-at-call.js";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const PAIRS = env("PAIRS", 6);
const N = env("N", 2_000_000);

let sink = 0;
function nsPerCall(take: (p: Uint8Array) => Uint8Array, payload: Uint8Array, n: number): number {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) sink += take(payload).byteLength;
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) * 1000) / n;
}

const ways = {
  check: (p: Uint8Array) => payloadAtCall(p, "jobs", undefined),
  copy: (p: Uint8Array) => heldPayload(p, "jobs", undefined),
};
console.log(`PAIRS=${PAIRS} N=${N} load ${loadAverageText()}; node ${process.version}`);
for (const size of [64, 64 * 1024]) {
  const payload = new Uint8Array(size).fill(7);
  const n = size > 1024 ? Math.max(1, Math.floor(N / 100)) : N;
  const figures: Record<string, number[]> = { check: [], copy: [] };
  for (let r = 0; r < PAIRS; r++) {
    const order = r % 2 === 0 ? (["check", "copy"] as const) : (["copy", "check"] as const);
    for (const w of order) figures[w]!.push(nsPerCall(ways[w], payload, n));
  }
  for (const w of ["check", "copy"] as const) {
    console.log(`${size} B ${w}: median ${median(figures[w]!).toFixed(1)} ns per call (${figures[w]!.map((x) => x.toFixed(1)).join(", ")})`);
  }
}
console.log(`load at end ${loadAverageText()}; ${sink > 0 ? "" : "-"}`);
