/**
 * @module How often a value token a workflow step asks the engine for
 * (`Engine.valueToken`, through `Queue.kvTokenNow`) could come from a
 * cache kept against the engine's commit count (`Engine.commits`), in a
 * compiled checkout, over the side-by-side workload
 * (bench/support/step-workload.ts, 10-step runs on a MemoryStore) with CONC
 * in flight. Such a cache answers without a look-up only when no commit
 * was applied since the key's token was last taken:
 * - `last key`: one entry, the key asked last (the call before was for the
 *   same key and no commit came between);
 * - `per key`: an entry per key (the key's previous call came at the same
 *   commit count), whatever was asked between.
 * Counts, not times: they move with how the steps interleave, so compare
 * at one concurrency.
 *
 * Run: `npm run build` in the checkout, then
 * `N=300 CONC=50 npx tsx bench/value-token-repeats.ts <checkout>`.
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, openStepWorkload, STEPS_PER_RUN, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 300);
const CONC = env("CONC", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

type Engine = import("../runtime/index.js").Engine;
type TokenOf = (this: Engine, key: string) => unknown;
const proto = T.Engine.prototype as unknown as { valueToken: TokenOf };
const original = proto.valueToken;
let counting = false;
let calls = 0;
let lastKeyHits = 0;
let perKeyHits = 0;
let lastKey: string | undefined;
let lastAt = -1;
const seenAt = new Map<string, number>();
proto.valueToken = function (this: Engine, key: string) {
  if (counting) {
    const at = this.commits;
    calls++;
    if (key === lastKey && at === lastAt) lastKeyHits++;
    if (seenAt.get(key) === at) perKeyHits++;
    seenAt.set(key, at);
    lastKey = key;
    lastAt = at;
  }
  return original.call(this, key);
};

const store = new T.MemoryStore();
const w = await openStepWorkload(T, store);
try {
  await w.drive(100, CONC);
  counting = true;
  await w.drive(N, CONC);
  counting = false;
  const steps = N * STEPS_PER_RUN;
  const pct = (n: number) => `${((100 * n) / calls).toFixed(1)} %`;
  console.log(`${dir}: N=${N} CONC=${CONC} load ${loadAverageText()}`);
  console.log(`valueToken calls per step ${(calls / steps).toFixed(3)}`);
  console.log(`  a hit for a one-entry cache (last key, no commit since) ${(lastKeyHits / steps).toFixed(3)} per step, ${pct(lastKeyHits)}`);
  console.log(`  a hit for a per-key cache (no commit since the key's last call) ${(perKeyHits / steps).toFixed(3)} per step, ${pct(perKeyHits)}`);
} finally {
  await w.close();
}
