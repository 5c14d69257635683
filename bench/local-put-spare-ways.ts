/**
 * @module What a LocalStore WAL put waits for on its own path, for ways of
 * having its temporary file ready, run as the put thread runs them:
 * synchronously, one put after another, with a gap of busy CPU between
 * the answer and the next request (the main thread's work on what the
 * answer released: about 0.1-0.3 ms one run at a time, 2-3 ms at 50 in
 * flight). Each put is timed from its write to the end of its directory
 * fsync (the answer); the tidy-up after it (closes, the temporary name's
 * removal, the next file made) runs before the gap, as the thread runs it.
 *
 * Ways:
 * - `fresh spare`: the next put's file made (not synced) in the tidy-up,
 *   as the put thread does when its sync-ahead policy is off (one run at
 *   a time): the put's O_DSYNC write also writes the directory's block
 *   (ext4 without a journal syncs a new file's parent at its first sync).
 * - `spare synced in the tidy-up`: the same file also fsynced there, as the
 *   thread does when the policy is on (50 in flight).
 * - `spare made and synced by a second thread`: another thread creates and
 *   fsyncs the next put's file, asked at the start of the put before it;
 *   the put opens it by name (its own open file, so a sync on the other
 *   thread's cannot take its writeback error) and waits for that thread if
 *   it has not finished.
 * - `temporary name removed before the directory fsync`: the unlink moved
 *   onto the put's path so the directory fsync covers it, fresh spare.
 * - `directory fdatasync` (fresh spare): not safe where a directory's new
 *   entry does not move its inode's datasync point (ext4 with a journal);
 *   only to measure the directory inode's write.
 *
 * Device counts per put are the disk's completed writes and flushes
 * (`/sys/block/<DEV>/stat`) over the round divided by its puts: the whole
 * machine's, so other programs' writes add to them.
 *
 * Run: `N=300 SIZE=660 GAP_US=200 ROUNDS=4 npx tsx bench/local-put-spare-ways.ts`
 * (DIR: where to make the files, default the system's temp; DEV: the block
 * device, default vda; WAYS: a comma list of way numbers, 1-based).
 */
import {
  closeSync,
  constants as C,
  fdatasyncSync,
  fsyncSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { Worker } from "node:worker_threads";
import { loadAverageText } from "./support/load-average.js";
import { percentile } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const SIZE = env("SIZE", 660);
const GAP_US = env("GAP_US", 200);
const ROUNDS = env("ROUNDS", 4);
const DEV = process.env.DEV ?? "vda";
const dir = mkdtempSync(join(process.env.DIR ?? tmpdir(), "put-spare-ways-"));
const body = Buffer.alloc(SIZE, 7);
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_DSYNC;

function deviceCounts(): { writes: number; flushes: number } {
  const f = readFileSync(`/sys/block/${DEV}/stat`, "utf8").trim().split(/\s+/).map(Number);
  return { writes: f[4] ?? 0, flushes: f[15] ?? 0 };
}

function busy(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end) {}
}

function syncDir(data: boolean): void {
  const fd = openSync(dir, "r");
  if (data) fdatasyncSync(fd);
  else fsyncSync(fd);
  closeSync(fd);
}

// The second thread: creates the named file, fsyncs it, closes it, answers.
const helperBuffer = new SharedArrayBuffer(4 + 4 + 1024);
const helperCtl = new Int32Array(helperBuffer, 0, 2);
const helperPath = new Uint8Array(helperBuffer, 8);
const helper = new Worker(
  `"use strict";
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
const C = fs.constants;
const ctl = new Int32Array(workerData, 0, 2);
const path = new Uint8Array(workerData, 8);
for (;;) {
  Atomics.wait(ctl, 0, 0);
  if (ctl[0] === 3) break;
  const p = new TextDecoder().decode(path.subarray(0, ctl[1]));
  let failed = 0;
  try {
    const fd = fs.openSync(p, C.O_WRONLY | C.O_CREAT | C.O_EXCL, 0o644);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  } catch (err) {
    ctl[1] = new TextEncoder().encodeInto(String(err), path).written;
    failed = 2;
  }
  Atomics.store(ctl, 0, 2 + failed);
  Atomics.notify(ctl, 0);
  Atomics.wait(ctl, 0, 2 + failed);
  if (ctl[0] === 3) break;
}`,
  { eval: true, workerData: helperBuffer },
);
// The thread starts on this thread's event loop: wait for it before anything blocks on it.
helper.on("error", (err) => {
  console.error("the second thread failed:", err);
  process.exit(1);
});
await once(helper, "online");
function askHelper(path: string): void {
  helperCtl[1] = new TextEncoder().encodeInto(path, helperPath).written;
  Atomics.store(helperCtl, 0, 1);
  Atomics.notify(helperCtl, 0);
}
let helperWaits = 0;
function helperDone(): void {
  if (Atomics.load(helperCtl, 0) === 1) {
    helperWaits++;
    // Bounded: a thread that stopped would otherwise hold this one for ever.
    const deadline = performance.now() + 60_000;
    while (Atomics.load(helperCtl, 0) === 1) {
      if (performance.now() > deadline) throw new Error("the second thread did not answer within 60 s");
      Atomics.wait(helperCtl, 0, 1, 1_000);
    }
  }
  if (Atomics.load(helperCtl, 0) === 4) throw new Error(`the second thread failed: ${new TextDecoder().decode(helperPath.subarray(0, helperCtl[1]))}`);
  Atomics.store(helperCtl, 0, 0);
  Atomics.notify(helperCtl, 0);
}

interface Way {
  name: string;
  /** One put of number i into the file `temp` (made ahead), timed by the caller; then its tidy-up making `next`. */
  put(i: number, temp: string, next: string): { fd: number; target: string };
  tidy(put: { fd: number; target: string }, temp: string, next: string): void;
  /** Makes the first put's file. */
  first(temp: string): void;
}

let spareFd = -1;
function writeAndLink(fd: number, temp: string, target: string): void {
  writeSync(fd, body, 0, SIZE, 0);
  const st = fstatSync(fd, { bigint: true });
  if (lstatSync(temp, { bigint: true }).ino !== st.ino) throw new Error("temporary file replaced");
  linkSync(temp, target);
}
const target = (i: number) => join(dir, String(i).padStart(20, "0"));

function threadWay(name: string, opts: { syncAhead: boolean; unlinkFirst: boolean; dirData: boolean }): Way {
  return {
    name,
    first(temp) {
      spareFd = openSync(temp, CREATE, 0o644);
      if (opts.syncAhead) fsyncSync(spareFd);
    },
    put(i, temp) {
      const fd = spareFd;
      writeAndLink(fd, temp, target(i));
      if (opts.unlinkFirst) unlinkSync(temp);
      syncDir(opts.dirData);
      return { fd, target: target(i) };
    },
    tidy(p, temp, next) {
      closeSync(p.fd);
      if (!opts.unlinkFirst) unlinkSync(temp);
      spareFd = openSync(next, CREATE, 0o644);
      if (opts.syncAhead) fsyncSync(spareFd);
    },
  };
}

const ways: Way[] = [
  threadWay("fresh spare (policy off)", { syncAhead: false, unlinkFirst: false, dirData: false }),
  threadWay("spare synced in the tidy-up (policy on)", { syncAhead: true, unlinkFirst: false, dirData: false }),
  {
    name: "spare made and synced by a second thread",
    first(temp) {
      askHelper(temp);
      helperDone();
      helperWaits = 0;
    },
    put(i, temp, next) {
      helperDone();
      askHelper(next);
      const fd = openSync(temp, C.O_WRONLY | C.O_DSYNC);
      writeAndLink(fd, temp, target(i));
      syncDir(false);
      return { fd, target: target(i) };
    },
    tidy(p, temp) {
      closeSync(p.fd);
      unlinkSync(temp);
    },
  },
  threadWay("temporary name removed before the directory fsync", { syncAhead: false, unlinkFirst: true, dirData: false }),
  threadWay("directory fdatasync (not safe with a journal)", { syncAhead: false, unlinkFirst: false, dirData: true }),
];

const chosen = process.env.WAYS === undefined ? ways : process.env.WAYS.split(",").map((n) => ways[Number(n) - 1] as Way);
console.log(`N=${N} SIZE=${SIZE} GAP_US=${GAP_US} ROUNDS=${ROUNDS} DEV=${DEV} load ${loadAverageText()}`);
const rows = new Map<string, string[]>();
let seq = 0;
const tempName = () => join(dir, `%tmp.${seq++}`);
try {
  for (let r = 0; r < ROUNDS; r++) {
    // Ways in a turned order every other round, so drift hits each alike.
    const order = r % 2 === 0 ? chosen : [...chosen].reverse();
    for (const way of order) {
      let temp = tempName();
      way.first(temp);
      helperWaits = 0;
      const times: number[] = [];
      const dev0 = deviceCounts();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) {
        const next = tempName();
        const start = performance.now();
        const p = way.put(i, temp, next);
        times.push((performance.now() - start) * 1000);
        way.tidy(p, temp, next);
        temp = next;
        busy(GAP_US);
      }
      const cycle = ((performance.now() - t0) * 1000) / N;
      const dev1 = deviceCounts();
      // The last spare: not a put's.
      if (way.name.includes("second thread")) helperDone();
      else closeSync(spareFd);
      times.sort((a, b) => a - b);
      const line =
        `put p50 ${percentile(times, 50).toFixed(0)} p90 ${percentile(times, 90).toFixed(0)} p99 ${percentile(times, 99).toFixed(0)} µs, ` +
        `cycle ${cycle.toFixed(0)} µs, device writes ${((dev1.writes - dev0.writes) / N).toFixed(2)} flushes ${((dev1.flushes - dev0.flushes) / N).toFixed(2)} per put` +
        (way.name.includes("second thread") ? `, waited for the thread ${helperWaits}` : "");
      rows.set(way.name, [...(rows.get(way.name) ?? []), line]);
      for (const f of readdirSync(dir)) unlinkSync(join(dir, f));
    }
  }
  for (const [name, lines] of rows) console.log(`${name}:\n  ${lines.join("\n  ")}`);
} finally {
  Atomics.store(helperCtl, 0, 3);
  Atomics.notify(helperCtl, 0);
  await helper.terminate();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load at end ${loadAverageText()}`);
