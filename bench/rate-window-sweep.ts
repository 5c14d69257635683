/**
 * @module Rate-window sweep: what one pass of the maintenance sweep of the
 * durable rate windows costs, by how many window records the queue holds.
 *
 * For each count in COUNTS (default 1000, 10000, 100000), writes that many
 * window records (one per rate key, as claims of that many distinct keys
 * would) into an engine on a MemoryStore, a tenth of them expired, then
 * times `sweepRateWindows` (median of ROUNDS, default 5; the deletes of the
 * first pass are rewritten before each round). The pass reads every record
 * from memory in one turn of the event loop, so its time is the longest
 * the loop is held; it makes no store request besides the commits of its
 * deletes.
 */
import { loadavg } from "node:os";
import { MemoryStore } from "../runtime/index.js";
import { Engine } from "../runtime/engine/engine.js";
import { WriteBatch } from "../runtime/engine/write-batch.js";
import { rateWindowKey } from "../runtime/queue/rate-records.js";
import { sweepRateWindows, type MaintenanceHost } from "../runtime/queue/maintenance.js";
import { Txn } from "../runtime/queue/txn.js";

const COUNTS = (process.env.COUNTS ?? "1000,10000,100000").split(",").map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const NOW = 1_700_000_000_000;
const PERIOD = 60_000;
const enc = new TextEncoder();

function windowBytes(expired: boolean): Uint8Array {
  // Four claim times kept, as a limit of 4 would; an expired window's last claim left the period.
  const last = expired ? NOW - 2 * PERIOD : NOW - 1_000;
  return enc.encode(JSON.stringify({ l: 4, p: PERIOD, u: last + PERIOD, t: [last - 300, 100, 100, 100] }));
}

async function fill(engine: Engine, n: number): Promise<void> {
  for (let i = 0; i < n; i += 5_000) {
    const b = new WriteBatch();
    for (let j = i; j < Math.min(n, i + 5_000); j++) b.put(rateWindowKey("q", `tenant-${j}`), windowBytes(j % 10 === 0));
    await engine.commit(b);
  }
}

async function main(): Promise<void> {
  console.log(
    `rate-window sweep: ROUNDS=${ROUNDS}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  for (const n of COUNTS) {
    const engine = await Engine.open(new MemoryStore());
    await fill(engine, n);
    const host = {
      engine,
      commitBackground: (txn: Txn) => engine.commit(txn.finish(), { durable: false }),
      ratePeriodOf: () => PERIOD,
    } as unknown as MaintenanceHost;
    const times: number[] = [];
    let deleted = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      deleted = sweepRateWindows(host, NOW);
      times.push(performance.now() - t0);
      await engine.flush();
      await fill(engine, n);
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    console.log(`${n} windows: ${deleted} expired deleted per pass, pass ${median.toFixed(1)} ms (median), ${((median * 1e6) / n).toFixed(0)} ns per window`);
    await engine.close();
  }
}

await main();
