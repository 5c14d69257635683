/**
 * @module The engine's durable commits alone, for instruction counts under
 * callgrind, which the machine's load does not move: WRITERS committers
 * on a MemoryStore engine, each awaiting COMMITS commits of a continuing
 * step's shape (a job record put, its claimed entry put, its pending entry
 * deleted, a history entry and a step pointer put: five ops, about 330
 * bytes of values) over 64 jobs each, as a workflow step's settlement
 * commits them. OPS (5 by default) changes the ops per commit: the first
 * OPS of that shape repeated over consecutive jobs (1: the job record's
 * put alone; 20: four jobs' five ops), so counts at OPS 1, 5 and 20 split
 * a commit's cost into a fixed part and a part per op. The
 * path of a step's commit through the engine: the batch read, the WAL
 * encoding, the memtable and changed-keys apply, the group commit and the
 * hand-out of its durability.
 *
 * Run it at two COMMITS per tree and divide the difference of the counts
 * by the commits between them (WRITERS x the COMMITS difference), so
 * start-up and most of the JIT's compiles cancel out. Bundled, so tsx's
 * compiles are not counted:
 * `npx esbuild bench/commit-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/commit-instructions.mjs`,
 * then `npm run build` in each checkout and
 * `COMMITS=<200|1200> valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation bench/.out/commit-instructions.mjs <checkout>`.
 * Without valgrind it prints the CPU per commit too (a rough figure).
 * COALESCE=1 joins the batches of one turn into one commit, every writer
 * awaiting it (bench/commit-joint-instructions.ts counts the same on the
 * queue's path, which copies no op).
 * Bytes per commit (counts the load does not move):
 * `ALLOC=10000 node --expose-gc --max-semi-space-size=64 bench/.out/commit-instructions.mjs <checkout>`.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { loadAverageText } from "./support/load-average.js";
import type { Engine } from "../runtime/index.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const COMMITS = env("COMMITS", 1000);
const WRITERS = env("WRITERS", 50);
const OPS = env("OPS", 5);
const ALLOC = env("ALLOC", 0);
/** COALESCE=1: the batches committed in one turn go to the engine as one commit (their ops joined in order), each writer awaiting that commit: what coalescing a turn's settlements could save on the engine's side. */
const COALESCE = env("COALESCE", 0);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

const record = new Uint8Array(200).fill(3);
const claimed = new Uint8Array(26).fill(0x41);
const history = new Uint8Array(60).fill(5);
const pointer = new Uint8Array(40).fill(9);

/** WRITERS committers, each awaiting `commits` commits of OPS ops (see the module documentation). */
async function drive(engine: Engine, commits: number): Promise<void> {
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const run = `01JABCDEFGHJKMNPQRSTV${String(w).padStart(5, "0")}`;
      for (let s = 0; s < commits; s++) {
        // A bounded working set (64 jobs and history entries per writer), as a queue whose jobs end: the state stays the same size.
        const batch = new T.WriteBatch();
        for (let k = 0; k < OPS; k++) {
          const at = (s * Math.ceil(OPS / 5) + Math.floor(k / 5)) % 64;
          const job = `01JB${String(w).padStart(4, "0")}${String(at).padStart(18, "0")}`;
          const kind = k % 5;
          if (kind === 0) batch.put(`q/jobs/${job}`, record);
          else if (kind === 1) batch.put(`q/claimed/steps/${job}`, claimed);
          else if (kind === 2) batch.delete(`q/pending/steps/${job}`);
          else if (kind === 3) batch.put(`w/history/${run}/${String(at).padStart(6, "0")}`, history);
          else batch.put(`w/pointer/${run}`, pointer);
        }
        await (COALESCE === 0 ? engine.commit(batch) : coalesced(engine, batch));
      }
    }),
  );
}

/** The ops of this turn's batches so far, and the promise of their joint commit (see COALESCE). */
let joined: InstanceType<Taquba["WriteBatch"]> | undefined;
let joint: Promise<void> = Promise.resolve();

/** Adds `batch`'s ops to the turn's joint batch, committed once the turn's microtasks ran: the joint commit's promise. */
function coalesced(engine: Engine, batch: InstanceType<Taquba["WriteBatch"]>): Promise<void> {
  if (joined === undefined) {
    const mine = (joined = new T.WriteBatch());
    joint = new Promise<void>((resolve, reject) => {
      process.nextTick(() => {
        joined = undefined;
        engine.commit(mine).then(resolve, reject);
      });
    });
  }
  joined.ops.push(...batch.ops);
  return joint;
}

/**
 * With ALLOC (node --expose-gc): ALLOC more commits after the counted ones,
 * from a full collection, and the heap's growth over them per commit, once
 * with no collection in between (the bytes a commit allocates; run with a
 * young generation that holds them, `--max-semi-space-size=64`, or it says
 * a collection ran) and once more after a minor collection (the bytes that
 * outlive a scavenge: what the memtable, the changed keys and the WAL keep).
 */
async function allocation(engine: Engine, commits: number): Promise<void> {
  const gc = (globalThis as { gc?: (o?: { type: string }) => void }).gc;
  if (gc === undefined) throw new Error("ALLOC needs node --expose-gc");
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  gc();
  await new Promise((r) => setImmediate(r));
  observer.observe({ entryTypes: ["gc"] });
  const before = process.memoryUsage().heapUsed;
  await drive(engine, commits / WRITERS);
  const allocated = process.memoryUsage().heapUsed - before;
  gc({ type: "minor" });
  const survived = process.memoryUsage().heapUsed - before;
  // The observer reports asynchronously: the minor collection above is one of them.
  await new Promise((r) => setTimeout(r, 50));
  observer.disconnect();
  const n = (commits / WRITERS) * WRITERS;
  console.log(
    `ALLOC=${commits}: ${(allocated / n).toFixed(0)} bytes allocated per commit${collections > 1 ? ` (NOT EXACT: ${collections - 1} collections ran during the commits)` : ""}, ${(survived / n).toFixed(0)} bytes left per commit after a minor collection`,
  );
}

const engine = await T.Engine.open(new T.MemoryStore());
try {
  const started = process.cpuUsage();
  await drive(engine, COMMITS);
  const used = process.cpuUsage(started);
  const commits = COMMITS * WRITERS;
  console.log(`${dir}: COMMITS=${COMMITS} WRITERS=${WRITERS} OPS=${OPS} COALESCE=${COALESCE} load ${loadAverageText()}`);
  console.log(
    `${commits} commits, CPU ${(((used.user + used.system) * 1000) / commits).toFixed(0)} ns per commit, ${(commits / engine.stats.walPuts).toFixed(1)} commits per WAL put, ${(commits / engine.commits).toFixed(1)} batches per engine commit`,
  );
  if (ALLOC > 0) await allocation(engine, ALLOC);
} finally {
  await engine.close();
}
