/**
 * @module What one create-if-absent LocalStore put costs the main thread,
 * counted in ways the machine's load does not move: N puts of SIZE bytes
 * into one directory (a WAL's stream), one at a time, each body lent as
 * the engine lends its WAL objects. Run it at two N and divide the
 * difference by the puts between them, so start-up, the thread's start and
 * most JIT compiles cancel out.
 *
 * Instructions of the main thread alone (the put thread, the pool and V8's
 * helpers each get a file of their own; thread 1 is the main one), bundled
 * so that tsx's compiles are not counted:
 * `npx esbuild bench/local-put-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/local-put-instructions.mjs`,
 * then `N=<100|300> valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=<dir>/cg.%p node bench/.out/local-put-instructions.mjs`
 * and read the main thread's total (`callgrind_annotate <dir>/cg.<pid>-01 | head`).
 *
 * System calls of the main thread: `strace -ff -o <dir>/st node ...` and
 * count the lines of `<dir>/st.<pid>` (the main thread's tid is the pid),
 * by name with `cut -d'(' -f1 | sort | uniq -c`.
 *
 * Without either it prints the main thread's CPU per put from Linux
 * schedstat (a rough figure under load). Env: N (200), SIZE (29000), WARM (600 puts
 * before the counted ones, so the put path runs optimized), PUT_THREAD (1; 0 for the pool).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalStore } from "../runtime/store/local-store.js";
import { lendBody } from "../runtime/store/put-body.js";
import { loadAverageText } from "./support/load-average.js";

const N = Number(process.env.N ?? 200);
const SIZE = Number(process.env.SIZE ?? 29000);
const PUT_THREAD = process.env.PUT_THREAD !== "0";
const WARM = Number(process.env.WARM ?? 600);

function mainThreadNs(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]);
}

const dir = mkdtempSync(join(tmpdir(), "bench-put-instructions-"));
const store = new LocalStore(dir, { putThread: PUT_THREAD });
const body = new Uint8Array(SIZE).fill(7);
lendBody(body);
try {
  for (let i = 0; i < WARM; i++) await store.put(`warm/${String(i).padStart(8, "0")}`, body, { ifNoneMatch: "*" });
  const c0 = mainThreadNs();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await store.put(`wal/${String(i).padStart(8, "0")}`, body, { ifNoneMatch: "*" });
  const wall = performance.now() - t0;
  const cpu = mainThreadNs() - c0;
  console.log(
    `local-put-instructions: N=${N} SIZE=${SIZE} WARM=${WARM} PUT_THREAD=${PUT_THREAD ? 1 : 0} load ${loadAverageText()}: ` +
      `main-thread CPU ${(cpu / N / 1000).toFixed(1)} µs per put, wall ${((wall / N) * 1000).toFixed(0)} µs per put`,
  );
} finally {
  // Removed by another process where it can: the removal of N files would count as the main thread's work per put.
  if (spawnSync("rm", ["-rf", dir]).status !== 0) rmSync(dir, { recursive: true, force: true });
}
