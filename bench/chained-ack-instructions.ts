/**
 * @module A queue's chained acks alone (no workflow), for instruction
 * counts under callgrind, which the machine's load does not move: CHAINS
 * chains in flight on a MemoryStore queue, each acking its job with
 * `ackClaimingNext` and one follow-up enqueue (a 16-byte payload and three
 * headers, as a workflow step's next job), taking that job claimed, STEPS
 * times. The path a continuing workflow step settles through: the held
 * record, `mayChain`, the claimed insert, the commit, the hand-out.
 *
 * Run it at two STEPS per tree and divide the difference of the counts by
 * the acks between them (CHAINS x the STEPS difference), so start-up and
 * most of the JIT's compiles cancel out. Bundled, so tsx's compiles are
 * not counted:
 * `npx esbuild bench/chained-ack-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/chained-ack.mjs`,
 * then `npm run build` in each checkout and
 * `STEPS=<200|1200> valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation bench/.out/chained-ack.mjs <checkout>`.
 * Without valgrind it prints the CPU per ack too (a rough figure).
 *
 * Or one run per tree and EXTRA with the warm-up uninstrumented: `WARM`
 * steps per chain (default 0) before a measured window of STEPS, through
 * bench/callgrind-gated.ts, which prints the window's instructions per ack:
 * `STEPS=60 WARM=100 EXTRA=<none|rewrite|move> npx tsx bench/callgrind-gated.ts <out.cg> node --single-threaded --no-concurrent-recompilation bench/.out/chained-ack.mjs <checkout>`.
 *
 * `EXTRA` adds caller KV ops to each ack's commit, to price one engine op
 * on this path: `rewrite` puts one key per chain again each ack (as a
 * step rewrites its run's step pointer), `move` puts a new key and deletes
 * the one the chain's ack before put (as a chained ack moves a job's `j/`
 * and `c/` keys); unset, none. The difference of the per-ack counts with
 * and without is what those ops cost.
 */
import type { ClaimedJob } from "../runtime/index.js";
import { gateClose, gateOpen } from "./support/callgrind-gate.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const STEPS = env("STEPS", 1000);
// Steps per chain before the measured window (see bench/callgrind-gated.ts).
const WARM = env("WARM", 0);
const CHAINS = env("CHAINS", 50);
// Long leases: under callgrind on a loaded machine a default lease expires before its ack.
const LEASE_MS = env("LEASE_MS", 3_600_000);
const EXTRA = process.env.EXTRA ?? "none";
if (EXTRA !== "none" && EXTRA !== "rewrite" && EXTRA !== "move") throw new Error(`EXTRA is none, rewrite or move, got ${EXTRA}`);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

const payload = new Uint8Array(16).fill(7);
const headers = { "taquba.run": "01JABCDEFGHJKMNPQRSTVWXYZ0", "taquba.step": "3", "taquba.kind": "step" };
const claimNext = { index: 0, leaseMs: LEASE_MS, reserve: () => true };

const queue = await T.Queue.open(new T.MemoryStore(), "bench");
try {
  for (let i = 0; i < CHAINS; i++) await queue.enqueue("steps", payload, { headers });
  const first = await queue.claimBatch("steps", CHAINS, LEASE_MS);
  if (first.length !== CHAINS) throw new Error(`claimed ${first.length} of ${CHAINS} jobs`);
  // Each chain's acks from step `from` to `to`, from its claimed job `start`; the job it then holds.
  const steps = async (start: ClaimedJob, c: number, from: number, to: number) => {
    let job = start;
    for (let s = from; s < to; s++) {
      const effects = new T.SettlementEffects().enqueue("steps", payload, { headers });
      if (EXTRA === "rewrite") effects.kvPut(`extra/${c}`, payload);
      else if (EXTRA === "move") {
        effects.kvPut(`extra/${c}/${s}`, payload);
        if (s > 0) effects.kvDelete(`extra/${c}/${s - 1}`);
      }
      const { next } = await queue.ackClaimingNext(job, effects, claimNext);
      if (next === undefined) throw new Error("the chained job was not handed out");
      job = next;
    }
    return job;
  };
  const warm = await Promise.all(first.map((start, c) => steps(start, c, 0, WARM)));
  await gateOpen();
  const started = process.cpuUsage();
  const held = await Promise.all(warm.map((start, c) => steps(start, c, WARM, WARM + STEPS)));
  const used = process.cpuUsage(started);
  const acks = STEPS * CHAINS;
  await gateClose(acks);
  await Promise.all(held.map((job) => queue.ack(job)));
  console.log(`${dir}: STEPS=${STEPS} WARM=${WARM} CHAINS=${CHAINS} EXTRA=${EXTRA} load ${loadAverageText()}`);
  console.log(`${acks} chained acks, CPU ${(((used.user + used.system) * 1000) / acks).toFixed(0)} ns per ack`);
} finally {
  await queue.close();
}
