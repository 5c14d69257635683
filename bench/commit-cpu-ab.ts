/**
 * @module CPU of `Engine.commit` itself (reading and checking the ops, the
 * WAL encoding, the in-memory apply) in one checkout: 200k batches of three
 * ops (two puts of 64 B, a delete) with queue-like keys over a 4096-key
 * working set, on a memory store, not awaited one by one (a flush every
 * 1000 commits). Run checkouts alternately:
 *
 *   npx tsx bench/commit-cpu-ab.ts <checkout>
 *
 * Env: ROUNDS (5), COMMITS (per round, 200000).
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";

type Module = typeof import("../runtime/index.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a checkout");
const { Engine, MemoryStore, WriteBatch }: Module = await import(pathToFileURL(join(dir, "runtime/index.ts")).href);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const COMMITS = Number(process.env.COMMITS ?? 200_000);

const value = new Uint8Array(64);
const ids = Array.from({ length: 4096 }, (_, i) => `01HF7YAT00FN46E22Q${String(i).padStart(8, "0")}`);
const engine = await Engine.open(new MemoryStore(), { checkpointWalBytes: 0, checkpointWalObjects: 0 });
const rounds: string[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const c0 = process.cpuUsage();
  for (let n = 0; n < COMMITS; n++) {
    const id = ids[n & 4095] as string;
    void engine.commit(new WriteBatch().put(`q/jobs/${id}`, value).put(`c/steps/${id}`, value).delete(`p/steps/${id}`), { durable: false });
    if (n % 1000 === 999) await engine.flush();
  }
  await engine.flush();
  const u = process.cpuUsage(c0);
  rounds.push((((u.user + u.system) / COMMITS) * 1000).toFixed(0));
}
await engine.close();
console.log(`${COMMITS} commits of 3 ops, ns CPU per commit by round: ${rounds.join(" / ")}`);
