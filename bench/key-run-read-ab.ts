/**
 * Key runs of pending jobs in two checkouts, alternating rounds in one
 * process: the bytes a run takes per entry (its entry buffer, and its
 * offsets and filter), and the CPU of the reads a queue makes of them: a
 * lookup of every key (an ack kills its job's entries through one) and a
 * cursor walk over the run (a claim's scan of the pending index), and a
 * lookup of keys the runs do not hold but that fall between their keys (a
 * record's id with one more character: what an enqueue's checks of new ids
 * ask of the runs), which the filter turns away or, when it says "maybe"
 * falsely, a search of one block does; with the share the filter let through.
 *
 * The keys are those a queue writes per pending job (queue/keys.ts): its
 * record `j/<id>`, paged to a segment run that changes every `PER_RUN`
 * jobs, and its pending entry `p/<queue>/<priority>/<id>`, whose value is
 * the id (a key tail); ids are monotonic ULIDs (26 characters, Crockford
 * base 32, the random part counting up by one).
 *
 *   npx tsx bench/key-run-read-ab.ts <base checkout> [jobs=500000] [rounds=10]
 */
import { resolve } from "node:path";
import type * as KeyRunModule from "../runtime/engine/key-run.js";
import type * as LivenessModule from "../runtime/engine/run-liveness.js";
import { median } from "./support/percentile.js";

const baseDir = process.argv[2];
if (baseDir === undefined) throw new Error("usage: key-run-read-ab.ts <base checkout> [jobs] [rounds]");
const jobs = Number(process.argv[3] ?? 500_000);
const rounds = Number(process.argv[4] ?? 10);
const PER_RUN = 8_000;

type Mod = typeof KeyRunModule & typeof LivenessModule;
async function load(dir: string): Promise<Mod> {
  const kr = (await import(resolve(dir, "runtime/engine/key-run.ts"))) as typeof KeyRunModule;
  const lv = (await import(resolve(dir, "runtime/engine/run-liveness.ts"))) as typeof LivenessModule;
  return { ...kr, ...lv };
}
const mods = { base: await load(baseDir), current: await load(".") };

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** Monotonic ULIDs: one time part, the random part counting up from a fixed start. */
function ids(n: number): string[] {
  const out: string[] = [];
  const digits = Array.from("7Q3M0ZK9D2XW4HTB", (c) => ALPHABET.indexOf(c));
  for (let i = 0; i < n; i++) {
    out.push(`01M92CFMXP${digits.map((d) => ALPHABET[d]).join("")}`);
    for (let p = digits.length - 1; p >= 0; p--) {
      if (++digits[p]! < 32) break;
      digits[p] = 0;
    }
  }
  return out;
}
const jobIds = ids(jobs);
const recordKeys = jobIds.map((id) => `j/${id}`);
const pendingKeys = jobIds.map((id) => `p/jobs/0000000000/${id}`);
const absentKeys = jobIds.map((id) => `j/${id}0`);

function build(m: Mod): { records: KeyRunModule.KeyRun; pending: KeyRunModule.KeyRun } {
  const r = new m.KeyRunBuilder();
  for (const [i, k] of recordKeys.entries()) r.add(k, 100 + Math.floor(i / PER_RUN));
  const p = new m.KeyRunBuilder();
  for (const k of pendingKeys) p.add(k, -26);
  return { records: r.finish(), pending: p.finish() };
}
const runs = { base: build(mods.base), current: build(mods.current) };
for (const which of ["base", "current"] as const) {
  const { records, pending } = runs[which];
  const per = (run: KeyRunModule.KeyRun) => `${(run.bytes.length / run.count).toFixed(2)} + ${((run.memoryBytes - run.bytes.length) / run.count).toFixed(2)} B`;
  console.log(`${which}: per entry (entries + offsets and filter): records ${per(records)}, pending ${per(pending)}`);
}

/** Looks up every key of both runs; returns the ones found. */
function lookups(m: Mod, r: typeof runs.base): number {
  const kb = new m.KeyBytes();
  const found = { valueAt: 0 };
  let n = 0;
  for (const k of recordKeys) if (r.records.find(k, kb.set(k), found) >= 0) n++;
  for (const k of pendingKeys) if (r.pending.find(k, kb.set(k), found) >= 0 && r.pending.value(found.valueAt) === -26) n++;
  return n;
}

/** Looks up keys between the records run's keys, none of them held; returns how many the filter let through. */
function absentLookups(m: Mod, r: typeof runs.base): number {
  const kb = new m.KeyBytes();
  const found = { valueAt: 0 };
  let passed = 0;
  for (const k of absentKeys) {
    if (r.records.mayHold(kb.set(k))) passed++;
    if (r.records.find(k, kb, found) >= 0) throw new Error(`found ${k}, which no run holds`);
  }
  return passed;
}

/** Walks both runs with a cursor, reading each value; returns the entries walked. */
function walks(m: Mod, r: typeof runs.base): number {
  let n = 0;
  for (const run of [r.records, r.pending]) {
    const c = new m.RunCursor(run, new m.RunLiveness(run.count, m.BLOCK_ENTRIES));
    while (c.advance()) if (run.value(c.valueAt) !== 0) n++;
  }
  return n;
}

const cpu = {
  base: { lookup: [] as number[], walk: [] as number[], absent: [] as number[], passed: 0 },
  current: { lookup: [] as number[], walk: [] as number[], absent: [] as number[], passed: 0 },
};
for (let round = 0; round < rounds; round++) {
  for (const which of (round % 2 === 0 ? ["current", "base"] : ["base", "current"]) as ("base" | "current")[]) {
    let t = process.cpuUsage();
    const found = lookups(mods[which], runs[which]);
    let used = process.cpuUsage(t);
    if (found !== 2 * jobs) throw new Error(`${which}: found ${found} of ${2 * jobs}`);
    if (round >= 2) cpu[which].lookup.push(((used.user + used.system) * 1000) / (2 * jobs));
    t = process.cpuUsage();
    const walked = walks(mods[which], runs[which]);
    used = process.cpuUsage(t);
    if (walked !== 2 * jobs) throw new Error(`${which}: walked ${walked} of ${2 * jobs}`);
    if (round >= 2) cpu[which].walk.push(((used.user + used.system) * 1000) / (2 * jobs));
    t = process.cpuUsage();
    cpu[which].passed = absentLookups(mods[which], runs[which]);
    used = process.cpuUsage(t);
    if (round >= 2) cpu[which].absent.push(((used.user + used.system) * 1000) / jobs);
  }
}
console.log(`${jobs.toLocaleString("en-US")} jobs (${2 * jobs} entries), ${rounds} rounds alternating, the first two not counted`);
for (const which of ["base", "current"] as const) {
  console.log(
    `${which}: median ${median(cpu[which].lookup).toFixed(0)} ns CPU per lookup, ${median(cpu[which].walk).toFixed(0)} ns per cursor step and value read, ${median(cpu[which].absent).toFixed(0)} ns per lookup of an absent key (filter and find; ${((100 * cpu[which].passed) / jobs).toFixed(2)} % let through)`,
  );
}
