/**
 * @module The lease registry's claim and settlement pair (`add`, then
 * `remove`) of two or more built checkouts, alternating round by round:
 * CPU per pair and the expiry nodes held at the end, over a stream with
 * CONC leases held whose settlements come in about the order the leases
 * were taken (each removal picks one of the JITTER oldest), as a step
 * queue's chained claims do. Leases of one duration.
 *
 * Run: `npm run build` in each checkout, then
 * `PAIRS=200000 CONC=50 JITTER=8 ROUNDS=12 npx tsx bench/lease-heap-ab.ts <A> <B>`.
 */
import { alternateRounds, printMedians } from "./support/alternate-rounds.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout } from "./support/step-workload.js";

type Registry = typeof import("../runtime/queue/lease-registry.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const PAIRS = env("PAIRS", 200_000);
const CONC = env("CONC", 50);
const JITTER = env("JITTER", 8);
const ROUNDS = env("ROUNDS", 12);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Registry[] = [];
for (const d of dirs) mods.push(await loadCheckout<Registry>(d, "dist/runtime/queue/lease-registry.js"));

// One seeded order of removals for every checkout and round.
let seed = 12345;
const rand = (n: number) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const picks = Array.from({ length: PAIRS }, () => rand(JITTER));
const ids = Array.from({ length: PAIRS }, (_, i) => `job-${i.toString().padStart(10, "0")}`);
const nodesAtEnd: number[][] = dirs.map(() => []);

console.log(`PAIRS=${PAIRS} CONC=${CONC} JITTER=${JITTER} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const figures = await alternateRounds(dirs, ROUNDS, (i) => {
  const reg = new mods[i]!.LeaseRegistry();
  const held: string[] = [];
  const cpu0 = process.cpuUsage();
  for (let t = 0; t < PAIRS; t++) {
    reg.add(ids[t]!, "q", 1_000_000 + t, false);
    held.push(ids[t]!);
    if (held.length > CONC) {
      const k = Math.min(picks[t]!, held.length - 1);
      reg.remove(held[k]!);
      held.splice(k, 1);
    }
  }
  const cpu = process.cpuUsage(cpu0);
  const nodes = (reg as unknown as { expiryNodes?: number }).expiryNodes;
  nodesAtEnd[i]!.push(nodes ?? Number.NaN);
  return ((cpu.user + cpu.system) * 1000) / PAIRS;
});
printMedians(dirs, figures, "ns of CPU per claim and settlement");
for (const [i, d] of dirs.entries()) console.log(`${d}: expiry nodes at the end ${nodesAtEnd[i]!.slice(-1)[0]} (NaN: not reported by this checkout)`);
console.log(`load at end ${loadAverageText()}`);
