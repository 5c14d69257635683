/**
 * @module Which lookups of a queue ask the key runs' Bloom filters, and how
 * often a filter's "maybe" is false: fills N pending jobs of 64 B (argv[2],
 * default 100000) in batches of 1000 on a LocalStore, closes, reopens, and
 * drains them with DRAINERS (default 128) claim→ack loops. Per phase
 * (fill, reopen, drain) and per first character of the key looked up (a
 * queue's keys: `j` records, `p` pending entries, ...), prints how many
 * probes each outcome had: rejected in the run's key range, rejected outside
 * it (the run's bounds would have turned it away too), "maybe" and held,
 * "maybe" and absent (a false positive: a search of one block in memory;
 * its rate is of all the probes of keys the run did not hold),
 * and open's questions. Then the key runs' sizes and their filters' bytes,
 * and the drain's store requests per claim.
 *
 *   npx tsx bench/filter-probes.ts 1000000
 */
import { loadavg } from "node:os";
import { LocalStore, Queue, withCounting } from "../runtime/index.js";
import { countFilterProbes, FilterOutcome, filterProbeCounts, keyRunTally, trackKeyRuns } from "../runtime/engine/key-run-tally.js";
import { withTempDir } from "./support/temp-dir.js";

const N = Number(process.argv[2] ?? 100_000);
const DRAINERS = Number(process.env.DRAINERS ?? 128);
const PAYLOAD = new Uint8Array(64).fill(7);
const MB = 1024 * 1024;

trackKeyRuns();

const OUTCOME_NAMES: Record<FilterOutcome, string> = {
  [FilterOutcome.RejectedInRange]: "no (in range)",
  [FilterOutcome.RejectedOutOfRange]: "no (out of range)",
  [FilterOutcome.MaybeHeld]: "maybe, held",
  [FilterOutcome.MaybeAbsent]: "maybe, absent",
  [FilterOutcome.AskedMaybe]: "asked: maybe",
  [FilterOutcome.AskedRejected]: "asked: no",
  [FilterOutcome.SkippedOutOfRange]: "not asked (out of range)",
};

function report(phase: string, per: number, perName: string): void {
  const load = loadavg()[0]!.toFixed(1);
  console.log(`\n${phase} (load ${load}): filter probes per first character of the key, total and per ${perName}`);
  console.log(`| key | ${Object.values(OUTCOME_NAMES).join(" | ")} | false-positive rate |`);
  console.log(
    `|---|${Object.keys(OUTCOME_NAMES)
      .map(() => "---")
      .join("|")}|---|`,
  );
  for (const { first, counts } of filterProbeCounts()) {
    const cells = counts.map((c) => `${c.toLocaleString("en-US")} (${(c / Math.max(1, per)).toFixed(2)})`);
    const absentAsked = counts[FilterOutcome.RejectedInRange]! + counts[FilterOutcome.RejectedOutOfRange]! + counts[FilterOutcome.MaybeAbsent]!;
    const fp = absentAsked === 0 ? "-" : `${((100 * counts[FilterOutcome.MaybeAbsent]!) / absentAsked).toFixed(2)} %`;
    console.log(`| ${JSON.stringify(first)} | ${cells.join(" | ")} | ${fp} |`);
  }
  const t = keyRunTally();
  console.log(
    `key runs ${t.runs}, largest ${t.largestEntries.toLocaleString("en-US")} entries, ${t.entries.toLocaleString("en-US")} entries; entries ${(t.bytes / MB).toFixed(1)} MB, offsets and filters ${(t.indexBytes / MB).toFixed(1)} MB of which filters ${(t.filterBytes / MB).toFixed(1)} MB (${(t.filterBytes / Math.max(1, t.entries)).toFixed(2)} B per entry)`,
  );
}

await withTempDir("taquba-filter-probes-", async (dir) => {
  countFilterProbes();
  let queue = await Queue.open(new LocalStore(dir), "probes");
  let t = performance.now();
  for (let i = 0; i < N; i += 1000) {
    const n = Math.min(1000, N - i);
    await queue.enqueueBatch(Array.from({ length: n }, () => ({ queueName: "jobs", payload: PAYLOAD })));
  }
  console.log(
    `filter-probes: ${N.toLocaleString("en-US")} pending jobs of 64 B, LocalStore, ${DRAINERS} drainers; fill ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  report("fill", N, "job");
  await queue.close();

  countFilterProbes();
  const store = withCounting(new LocalStore(dir));
  t = performance.now();
  queue = await Queue.open(store, "probes");
  console.log(`\nreopen ${((performance.now() - t) / 1000).toFixed(2)} s`);
  report("reopen", N, "job");

  countFilterProbes();
  store.reset();
  let claims = 0;
  t = performance.now();
  await Promise.all(
    Array.from({ length: DRAINERS }, async () => {
      for (;;) {
        const job = await queue.claim("jobs");
        if (job === null) return;
        claims++;
        await queue.ack(job);
      }
    }),
  );
  const s = (performance.now() - t) / 1000;
  console.log(
    `\ndrain: ${claims.toLocaleString("en-US")} claims in ${s.toFixed(1)} s (${Math.round(claims / s).toLocaleString("en-US")} claims/s, counting on); per claim ${(store.counts.gets / Math.max(1, claims)).toFixed(3)} gets, ${(store.counts.puts / Math.max(1, claims)).toFixed(3)} puts`,
  );
  report("drain", claims, "claim");
  await queue.close();
});
