/**
 * @module CPU of taking a small continue payload at the runner's return
 * and handing it to a chained step's claim, which checks whether the array
 * owns its whole buffer (and copies it out when not). Three forms over the
 * side-by-side workload's payloads (4 bytes from `TextEncoder`): no copy
 * (before the payload was taken), a plain copy (`new Uint8Array(payload)`,
 * whose buffer the claim's read then moves out of V8's heap), and the copy
 * `continuedAtReturn` makes (a view of a shared chunk, copied out by the
 * claim). The forms alternate, the order reversed every round; medians of
 * the rounds after the first two. Each figure includes the payload's
 * encoding, the same in all three.
 *
 * Run: `CALLS=2000000 ROUNDS=8 npx tsx bench/continue-payload-copy.ts`.
 */
import { continuedAtReturn } from "../runtime/workflow/steps/returned-payload.js";
import { StepOutcome } from "../runtime/workflow/steps/step-outcome.js";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 2_000_000);
const ROUNDS = env("ROUNDS", 8);
const enc = new TextEncoder();
let serial = 0;

/** As the claimed job takes a chained step's payload: kept when it owns its whole buffer, else copied. */
function claimed(v: Uint8Array): Uint8Array {
  return v.byteLength === v.buffer.byteLength ? v : v.slice();
}

const forms: Record<string, () => number> = {
  "no copy": () => claimed(enc.encode(`${serial++ % 10}/10`)).byteLength,
  "plain copy": () => claimed(new Uint8Array(enc.encode(`${serial++ % 10}/10`))).byteLength,
  "chunk copy": () => {
    const o = continuedAtReturn(StepOutcome.continueNow(enc.encode(`${serial++ % 10}/10`)) as never, false, "r", 0);
    return claimed(o.payload).byteLength;
  },
};

function measure(f: () => number): number {
  const t0 = process.cpuUsage();
  let sum = 0;
  for (let i = 0; i < CALLS; i++) sum += f();
  const d = process.cpuUsage(t0);
  if (sum !== CALLS * 4) throw new Error("wrong sizes");
  return ((d.user + d.system) * 1000) / CALLS;
}

console.log(`CALLS=${CALLS} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const names = Object.keys(forms);
const figures = new Map(names.map((n) => [n, [] as number[]]));
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const n of order) figures.get(n)!.push(measure(forms[n]!));
  console.log(`round ${r}: ${names.map((n) => `${n} ${figures.get(n)![r]!.toFixed(0)} ns`).join(", ")}`);
}
console.log(`medians of rounds 3-${ROUNDS}: ${names.map((n) => `${n} ${median(figures.get(n)!.slice(2)).toFixed(0)} ns`).join(", ")}`);
console.log(`load at end ${loadAverageText()}`);
