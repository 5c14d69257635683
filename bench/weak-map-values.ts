/**
 * @module What a `WeakMap` keyed by short-lived objects costs the garbage
 * collector, against the same value held by the key itself: the shape of a
 * claimed job's ticket (its record, stored bytes and payload copy), held
 * while the job is in flight, then dropped with it.
 *
 * N keys (argv[2], default 2,000,000) are made one after another, each with
 * a value of about 1 KB, and IN_FLIGHT (default 128, the drain's claimers)
 * are kept alive at a time; each way runs in a child process of its own so
 * neither inherits the other's heap. Reported per way: scavenges and
 * mark-compacts (counted by a `gc` performance observer, no flags needed)
 * and the CPU time.
 *
 *   npx tsx bench/weak-map-values.ts
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { PerformanceObserver, constants } from "node:perf_hooks";
import { loadAverageText } from "./support/load-average.js";

const N = Number(process.argv[2] ?? 2_000_000);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 128);
const WAY = process.env.WEAK_MAP_WAY;

/** One way in this process: prints one JSON line. */
function runWay(viaWeakMap: boolean): void {
  let scavenges = 0;
  let markCompacts = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) markCompacts++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
    }
  });
  obs.observe({ entryTypes: ["gc"] });
  const values = new WeakMap<object, { record: number[] }>();
  const inFlight: { id: number; value?: { record: number[] } }[] = [];
  let sink = 0;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const key: { id: number; value?: { record: number[] } } = { id: i };
    const value = { record: new Array<number>(120).fill(i) };
    if (viaWeakMap) values.set(key, value);
    else key.value = value;
    inFlight.push(key);
    if (inFlight.length > IN_FLIGHT) inFlight.shift();
    // Short-lived garbage besides, as a claim's path makes.
    for (let k = 0; k < 20; k++) sink += [k, i].length;
  }
  const cpu = process.cpuUsage(cpu0);
  // Let the observer deliver the last entries.
  setTimeout(() => {
    obs.disconnect();
    console.log(JSON.stringify({ scavenges, markCompacts, cpuS: (cpu.user + cpu.system) / 1e6, sink: sink > 0 }));
  }, 50);
}

if (WAY !== undefined) runWay(WAY === "weakmap");
else {
  const self = fileURLToPath(import.meta.url);
  console.log(`weak-map-values: ${N.toLocaleString("en-US")} keys, ${IN_FLIGHT} alive at a time, about 1 KB each; load ${loadAverageText()}`);
  console.log("| the value held by | scavenges | mark-compacts | CPU |");
  console.log("|---|---|---|---|");
  for (const way of ["weakmap", "key"] as const) {
    const out = execFileSync(process.execPath, [...process.execArgv, self, String(N)], { env: { ...process.env, WEAK_MAP_WAY: way }, encoding: "utf8" });
    const r = JSON.parse(out.trim().split("\n").at(-1)!) as { scavenges: number; markCompacts: number; cpuS: number };
    console.log(`| ${way === "weakmap" ? "a WeakMap keyed by the key" : "the key"} | ${r.scavenges} | ${r.markCompacts} | ${r.cpuS.toFixed(2)} s |`);
  }
}
