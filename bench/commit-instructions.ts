/**
 * @module The engine's durable commits alone, for instruction counts under
 * callgrind, which the machine's load does not move: WRITERS committers
 * on a MemoryStore engine, each awaiting COMMITS commits of a continuing
 * step's shape (a job record put, its claimed entry put, its pending entry
 * deleted, a history entry and a step pointer put: five ops, about 330
 * bytes of values) over 64 jobs each, as a workflow step's settlement
 * commits them. The
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
 */
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const COMMITS = env("COMMITS", 1000);
const WRITERS = env("WRITERS", 50);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const T = await loadCheckout<Taquba>(dir);

const record = new Uint8Array(200).fill(3);
const claimed = new Uint8Array(26).fill(0x41);
const history = new Uint8Array(60).fill(5);
const pointer = new Uint8Array(40).fill(9);

const engine = await T.Engine.open(new T.MemoryStore());
try {
  const started = process.cpuUsage();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const run = `01JABCDEFGHJKMNPQRSTV${String(w).padStart(5, "0")}`;
      for (let s = 0; s < COMMITS; s++) {
        // A bounded working set (64 jobs and history entries per writer), as a queue whose jobs end: the state stays the same size.
        const job = `01JB${String(w).padStart(4, "0")}${String(s % 64).padStart(18, "0")}`;
        const batch = new T.WriteBatch()
          .put(`q/jobs/${job}`, record)
          .put(`q/claimed/steps/${job}`, claimed)
          .delete(`q/pending/steps/${job}`)
          .put(`w/history/${run}/${String(s % 64).padStart(6, "0")}`, history)
          .put(`w/pointer/${run}`, pointer);
        await engine.commit(batch);
      }
    }),
  );
  const used = process.cpuUsage(started);
  const commits = COMMITS * WRITERS;
  console.log(`${dir}: COMMITS=${COMMITS} WRITERS=${WRITERS} load ${loadAverageText()}`);
  console.log(
    `${commits} commits, CPU ${(((used.user + used.system) * 1000) / commits).toFixed(0)} ns per commit, ${(commits / engine.stats.walPuts).toFixed(1)} commits per WAL put`,
  );
} finally {
  await engine.close();
}
