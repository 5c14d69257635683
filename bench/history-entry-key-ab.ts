/**
 * @module CPU of staging a step's history entry at its key, the two ways a
 * settlement can: the key built per step (`stepHistoryKey`, then
 * `stageCommitOnlyOnce` prefixes it, checks it whole and cuts the caller key
 * out of it) against the run's history prefix checked once and each entry
 * staged by its step number (`stageCommitOnlyUnder`). The value staged is
 * one small shared array; the runs' ids are fresh ULID-like strings, ten
 * steps each, as in the side-by-side workload. Rounds alternate the two
 * forms, the order reversed every round; medians of the rounds after the
 * first two.
 *
 * Run: `CALLS=200000 ROUNDS=10 npx tsx bench/history-entry-key-ab.ts`.
 */
import { SettlementEffects } from "../runtime/queue/effects.js";
import { KvKeyPrefixRef } from "../runtime/queue/user-keys.js";
import { type CommitOnlyBytes, stageCommitOnlyOnce, stageCommitOnlyUnder } from "../runtime/workflow/records/commit-bytes.js";
import { paddedStep, runHistoryPrefix, stepHistoryKey } from "../runtime/workflow/runs/history-records.js";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const CALLS = env("CALLS", 200_000);
const ROUNDS = env("ROUNDS", 10);
const STEPS = 10;
const Q = "workflow-steps";
const bytes = new Uint8Array(120) as unknown as CommitOnlyBytes;

let serial = 0;
const runId = () => `01JD${(serial++).toString(36).toUpperCase().padStart(22, "0")}`;

function perStepKey(): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < CALLS / STEPS; i++) {
    const id = runId();
    for (let s = 0; s < STEPS; s++) stageCommitOnlyOnce(new SettlementEffects(), stepHistoryKey(Q, id, s), bytes);
  }
  const d = process.cpuUsage(t0);
  return ((d.user + d.system) * 1000) / CALLS;
}

function runPrefix(): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < CALLS / STEPS; i++) {
    const prefix = KvKeyPrefixRef.of(runHistoryPrefix(Q, runId()));
    for (let s = 0; s < STEPS; s++) stageCommitOnlyUnder(new SettlementEffects(), prefix, paddedStep(s), bytes);
  }
  const d = process.cpuUsage(t0);
  return ((d.user + d.system) * 1000) / CALLS;
}

console.log(`CALLS=${CALLS} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  if (r % 2 === 0) {
    a.push(perStepKey());
    b.push(runPrefix());
  } else {
    b.push(runPrefix());
    a.push(perStepKey());
  }
  console.log(`round ${r}: key per step ${a[r]!.toFixed(1)} ns, run prefix ${b[r]!.toFixed(1)} ns per entry (the effects object included)`);
}
console.log(`median of rounds 3-${ROUNDS}: key per step ${median(a.slice(2)).toFixed(1)} ns, run prefix ${median(b.slice(2)).toFixed(1)} ns per entry`);
console.log(`load at end ${loadAverageText()}`);
