/**
 * @module Kernel and user CPU per durable file put, for ways of making a
 * new file durable under its name, run synchronously on the main thread
 * (as LocalStore's put thread runs them), round by round in one process:
 * - as LocalStore makes it: the body written once into a temporary file
 *   opened with O_DSYNC, linked to its name, the directory fsynced;
 * - the write and an fdatasync instead of O_DSYNC;
 * - a rename instead of the link;
 * - the body written to its final name directly (no temporary name: a
 *   crash could leave a partial object under its name; only to measure);
 * - no directory fsync (the name may be lost at a crash; only to measure
 *   what that fsync costs);
 * - the body in 4 KiB writes (one write per page).
 * Reported per round and way: system and user CPU µs per put
 * (`process.cpuUsage`) and wall µs, with the load.
 *
 * Run: `N=200 SIZE=24000 ROUNDS=3 npx tsx bench/local-put-variants.ts`
 * (DIR: the directory to make the files in, default the system's temp).
 */
import {
  closeSync,
  constants as C,
  fdatasyncSync,
  fsyncSync,
  linkSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 200);
const SIZE = env("SIZE", 24_000);
const ROUNDS = env("ROUNDS", 3);
const dir = mkdtempSync(join(process.env.DIR ?? tmpdir(), "put-variants-"));
const body = Buffer.alloc(SIZE, 7);
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL;
let seq = 0;

function syncDir(): void {
  const fd = openSync(dir, "r");
  fsyncSync(fd);
  closeSync(fd);
}

function names(): { temp: string; target: string } {
  const n = seq++;
  return { temp: join(dir, `t${n}`), target: join(dir, `o${n}`) };
}

const ways: Record<string, () => void> = {
  "O_DSYNC write, link, dir fsync (as made)": () => {
    const { temp, target } = names();
    const fd = openSync(temp, CREATE | C.O_DSYNC, 0o644);
    writeSync(fd, body, 0, SIZE, 0);
    linkSync(temp, target);
    syncDir();
    closeSync(fd);
    unlinkSync(temp);
  },
  "write + fdatasync, link, dir fsync": () => {
    const { temp, target } = names();
    const fd = openSync(temp, CREATE, 0o644);
    writeSync(fd, body, 0, SIZE, 0);
    fdatasyncSync(fd);
    linkSync(temp, target);
    syncDir();
    closeSync(fd);
    unlinkSync(temp);
  },
  "O_DSYNC write, rename, dir fsync": () => {
    const { temp, target } = names();
    const fd = openSync(temp, CREATE | C.O_DSYNC, 0o644);
    writeSync(fd, body, 0, SIZE, 0);
    renameSync(temp, target);
    syncDir();
    closeSync(fd);
  },
  "O_DSYNC write to the final name, dir fsync (not crash safe)": () => {
    const { target } = names();
    const fd = openSync(target, CREATE | C.O_DSYNC, 0o644);
    writeSync(fd, body, 0, SIZE, 0);
    syncDir();
    closeSync(fd);
  },
  "O_DSYNC write, link, no dir fsync (not crash safe)": () => {
    const { temp, target } = names();
    const fd = openSync(temp, CREATE | C.O_DSYNC, 0o644);
    writeSync(fd, body, 0, SIZE, 0);
    linkSync(temp, target);
    closeSync(fd);
    unlinkSync(temp);
  },
  "O_DSYNC writes of 4 KiB, link, dir fsync": () => {
    const { temp, target } = names();
    const fd = openSync(temp, CREATE | C.O_DSYNC, 0o644);
    for (let at = 0; at < SIZE; at += 4096) writeSync(fd, body, at, Math.min(4096, SIZE - at), at);
    linkSync(temp, target);
    syncDir();
    closeSync(fd);
    unlinkSync(temp);
  },
};

console.log(`N=${N} SIZE=${SIZE} ROUNDS=${ROUNDS} load ${loadAverageText()}`);
const figures = new Map<string, string[]>();
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, put] of Object.entries(ways)) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) put();
      const cpu = process.cpuUsage(cpu0);
      const wall = performance.now() - t0;
      const line = `sys ${(cpu.system / N).toFixed(0)} user ${(cpu.user / N).toFixed(0)} wall ${((wall * 1000) / N).toFixed(0)} µs`;
      figures.set(name, [...(figures.get(name) ?? []), line]);
      for (const f of readdirSync(dir)) unlinkSync(join(dir, f));
    }
  }
  for (const [name, lines] of figures) console.log(`${name}: ${lines.join(" | ")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load at end ${loadAverageText()}`);
