/**
 * @module CPU per listed key of an S3 listing held to the store contract
 * (`ListingPages.take` and `next`), two trees' versions side by side in one
 * process, rounds alternating which goes first. Pages of 1,000 keys under
 * one prefix, no start-after, each key once: the plain listing of a
 * well-behaved service, where every check passes.
 *
 * Usage: npx tsx bench/listing-pages-ab.ts <tree a> <tree b>
 * Env: KEYS (default 200000), ROUNDS (default 20).
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

interface Pages {
  take(key: string): boolean;
  next(truncated: boolean, token: string | undefined): string | undefined;
}
type PagesClass = new (where: string, prefix: string, listed: string, startAfter: string | undefined) => Pages;

const [treeA, treeB] = process.argv.slice(2);
if (treeA === undefined || treeB === undefined) throw new Error("usage: listing-pages-ab.ts <tree a> <tree b>");
const KEYS = Number(process.env.KEYS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 20);
const PAGE = 1000;

async function load(tree: string): Promise<PagesClass> {
  const mod = (await import(pathToFileURL(resolve(tree, "runtime/store/listing-pages.ts")).href)) as { ListingPages: PagesClass };
  return mod.ListingPages;
}

const keys = Array.from({ length: KEYS }, (_, i) => `tenant/queue/wal/${String(i).padStart(20, "0")}`);

/** CPU microseconds to list every key through `Pages`. */
function cpuOf(Pages: PagesClass): number {
  const pages = new Pages('bucket "b"', "tenant/queue/", "queue/", undefined);
  let taken = 0;
  const start = process.cpuUsage();
  for (let from = 0; from < keys.length; from += PAGE) {
    const end = Math.min(from + PAGE, keys.length);
    for (let i = from; i < end; i++) if (pages.take(keys[i]!)) taken++;
    pages.next(end < keys.length, end < keys.length ? `token-${end}` : undefined);
  }
  const used = process.cpuUsage(start);
  if (taken !== keys.length) throw new Error(`took ${taken} of ${keys.length} keys`);
  return used.user + used.system;
}

const A = await load(treeA);
const B = await load(treeB);
for (let w = 0; w < 3; w++) {
  cpuOf(A);
  cpuOf(B);
}
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  if (r % 2 === 0) {
    a.push(cpuOf(A));
    b.push(cpuOf(B));
  } else {
    b.push(cpuOf(B));
    a.push(cpuOf(A));
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
const perKey = (us: number) => ((us * 1000) / KEYS).toFixed(1);
console.log(`keys ${KEYS}, pages of ${PAGE}, rounds ${ROUNDS}`);
console.log(`a ${treeA}: median ${perKey(median(a))} ns per key`);
console.log(`b ${treeB}: median ${perKey(median(b))} ns per key`);
