/**
 * @module What one durable create-if-absent put costs on a local directory,
 * step by step: LocalStore's path (temporary file, fsync, link, directory
 * fsync) against cheaper sequences, and the floor (one fdatasync of a file
 * already open). Sequential puts of a WAL-sized body, variants alternating
 * round by round so the disk's drift hits each alike.
 *
 * Variants:
 * - `localstore`: `LocalStore.put(key, body, { ifNoneMatch: "*" })` itself.
 * - `temp+link, fsync`: the same syscalls spelled out (open temp O_EXCL,
 *   write, fsync, fstat, close, link, unlink temp, open dir, fsync dir, close).
 * - `temp+link, fdatasync`: as above with fdatasync for the file.
 * - `O_EXCL target, fdatasync`: create the final name directly, write,
 *   fdatasync, close, fsync dir. Not atomic: a crash mid-write leaves a
 *   short object under its final name.
 * - `fdatasync only`: write + fdatasync to one open file (the floor).
 *
 * Env: N (200 puts per variant per round), ROUNDS (3), BYTES (1024).
 */
import { constants as fsConstants, mkdtempSync, rmSync } from "node:fs";
import * as fs from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { LocalStore } from "../runtime/index.js";
import { percentile } from "./support/percentile.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 200);
const ROUNDS = env("ROUNDS", 3);
const BYTES = env("BYTES", 1024);
const body = new Uint8Array(BYTES).fill(7);

async function fsyncDir(dir: string): Promise<void> {
  const h = await fs.open(dir, "r");
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

type Put = ((i: number) => Promise<void>) & { close?: () => Promise<void> };
type Variant = { name: string; setup(dir: string): Promise<Put> };

const variants: Variant[] = [
  {
    name: "localstore",
    async setup(dir) {
      const store = new LocalStore(dir);
      return async (i) => void (await store.put(`wal/${String(i).padStart(12, "0")}`, body, { ifNoneMatch: "*" }));
    },
  },
  ...[false, true].map(
    (data): Variant => ({
      name: `temp+link, ${data ? "fdatasync" : "fsync"}`,
      async setup(dir) {
        return async (i) => {
          const temp = join(dir, `tmp.${i}`);
          const h = await fs.open(temp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o644);
          await h.writeFile(body);
          await (data ? h.datasync() : h.sync());
          await h.stat({ bigint: true });
          await h.close();
          await fs.link(temp, join(dir, `obj.${i}`));
          await fs.unlink(temp);
          await fsyncDir(dir);
        };
      },
    }),
  ),
  {
    name: "O_EXCL target, fdatasync",
    async setup(dir) {
      return async (i) => {
        const h = await fs.open(join(dir, `obj.${i}`), fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o644);
        await h.writeFile(body);
        await h.datasync();
        await h.close();
        await fsyncDir(dir);
      };
    },
  },
  {
    name: "fdatasync only",
    async setup(dir) {
      const h = await fs.open(join(dir, "log"), "w");
      const put: Put = async () => {
        await h.write(body);
        await h.datasync();
      };
      put.close = () => h.close();
      return put;
    },
  },
];

const times = new Map<string, number[]>(variants.map((v) => [v.name, []]));
console.log(
  `N=${N} ROUNDS=${ROUNDS} BYTES=${BYTES} load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
for (let r = 0; r < ROUNDS; r++) {
  for (const v of variants) {
    const dir = mkdtempSync(join(tmpdir(), "taquba-put-"));
    const put = await v.setup(dir);
    try {
      await put(-1);
      for (let i = 0; i < N; i++) {
        const t = performance.now();
        await put(i);
        times.get(v.name)!.push(performance.now() - t);
      }
    } finally {
      await put.close?.();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
console.log("| variant | p50 ms | p90 ms | p99 ms |");
console.log("|---|---|---|---|");
for (const [name, xs] of times) {
  xs.sort((a, b) => a - b);
  console.log(`| ${name} | ${percentile(xs, 50).toFixed(3)} | ${percentile(xs, 90).toFixed(3)} | ${percentile(xs, 99).toFixed(3)} |`);
}
console.log(
  `load at end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
