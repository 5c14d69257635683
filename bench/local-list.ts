/**
 * @module What an engine reader's refresh costs on a LocalStore: listing a
 * WAL folder of N objects for the few after `startAfter` (the objects
 * written since the last refresh). The files are made directly, in the
 * layout LocalStore uses, so the folder fills fast.
 *
 * Reports wall time and the process's CPU time per listing (user and
 * system, all threads: on a loaded machine the steadier of the two).
 *
 * Env: N (20000 objects), NEW (10 after startAfter), REPEAT (20 listings).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { LocalStore } from "../runtime/index.js";
import { percentile } from "./support/percentile.js";
import { withTempDir } from "./support/temp-dir.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 20000);
const NEW = env("NEW", 10);
const REPEAT = env("REPEAT", 20);
const name = (i: number) => String(i).padStart(20, "0");

await withTempDir("bench-local-list-", async (dir) => {
  const wal = join(dir, "wal%2F");
  await mkdir(wal, { recursive: true });
  for (let i = 0; i < N; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, N - i) }, (_, k) => writeFile(join(wal, name(i + k)), "x")));
  }
  const store = new LocalStore(dir);
  const startAfter = `wal/${name(N - NEW - 1)}`;
  const times: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < REPEAT + 2; r++) {
    const t = performance.now();
    const c = process.cpuUsage();
    let seen = 0;
    for await (const _ of store.list("wal/", { startAfter })) seen++;
    if (seen !== NEW) throw new Error(`listed ${seen}, expected ${NEW}`);
    const used = process.cpuUsage(c);
    if (r >= 2) {
      times.push(performance.now() - t);
      cpu.push((used.user + used.system) / 1000);
    }
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  console.log(
    `local-list: N=${N} NEW=${NEW} REPEAT=${REPEAT} listing p50 ${percentile(times, 50).toFixed(2)} ms p90 ${percentile(times, 90).toFixed(2)} ms, CPU p50 ${percentile(cpu, 50).toFixed(2)} ms load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
});
