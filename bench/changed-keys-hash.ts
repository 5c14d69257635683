/**
 * @module CPU of the checkpoint's changed keys (changed-keys.ts) in one
 * checkout: 1M sets of queue-like keys into a fresh map (each key new, as
 * a fill makes them), then 65,536 keys made to share one FNV-1a hash from
 * its usual start (two blocks of six letters reaching one state, chained
 * 16 times). Run the checkouts alternately, each several times:
 *
 *   npx tsx bench/changed-keys-hash.ts <checkout>
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";

type Module = typeof import("../runtime/engine/changed-keys.js");

const dir = process.argv[2];
if (dir === undefined) throw new Error("name a checkout");
const { ChangedKeys }: Module = await import(pathToFileURL(join(dir, "runtime/engine/changed-keys.ts")).href);

const fnvFrom = (h: number, s: string) => {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
};

/** 2^stages keys with one FNV-1a hash from the usual start. */
function collidingKeys(stages: number): string[] {
  let keys = ["u/"];
  let state = fnvFrom(0x811c9dc5, "u/");
  let seed = 1;
  const block = () => {
    let b = "";
    for (let i = 0; i < 6; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      b += String.fromCharCode(97 + ((seed >>> 16) % 26));
    }
    return b;
  };
  for (let s = 0; s < stages; s++) {
    const seen = new Map<number, string>();
    for (;;) {
      const b = block();
      const h = fnvFrom(state, b);
      const other = seen.get(h);
      if (other !== undefined && other !== b) {
        keys = keys.flatMap((k) => [k + other, k + b]);
        state = h;
        break;
      }
      seen.set(h, b);
    }
  }
  return keys;
}

const cpuMs = (from: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
};

const N = 1_000_000;
const queueKeys = Array.from({ length: N }, (_, i) => `q/jobs/01HF7YAT00FN46E22Q${String(i).padStart(8, "0")}`);
const value = new Uint8Array(1);
const fills: string[] = [];
for (let round = 0; round < 3; round++) {
  const c0 = process.cpuUsage();
  const m = new ChangedKeys<Uint8Array>();
  for (const k of queueKeys) m.set(k, value);
  fills.push(cpuMs(c0).toFixed(0));
}
const crafted = collidingKeys(16);
const c1 = process.cpuUsage();
const m = new ChangedKeys<Uint8Array>();
for (const k of crafted) m.set(k, value);
console.log(`1M queue keys: ${fills.join(" / ")} ms CPU; 65,536 crafted keys: ${cpuMs(c1).toFixed(0)} ms CPU (${m.size} keys)`);
