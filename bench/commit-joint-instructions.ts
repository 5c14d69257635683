/**
 * @module What coalescing a turn's commits into one engine commit would
 * save on the engine's side, on the path the queue commits by
 * (`commitOwned`: ops it made, no copy of each op), for instruction counts
 * under callgrind. A MemoryStore engine takes N batches of OPS puts (a
 * 200-byte value each, over a bounded working set of 64 keys per writer)
 * in turns of TURN batches, as the side-by-side's 50 runs in flight
 * settle in one turn; the turn's last commit is awaited before the next
 * turn. MODE:
 * - `separate` (default): one durable commit per batch, as today.
 * - `joint`: the turn's batches joined in order into commits of CHUNK
 *   batches each (CHUNK defaults to TURN: one commit per turn).
 * - `apply`: one commit per batch applied with no durability promise
 *   (`applyOwned`), the turn then awaiting `flush`: `separate` less this
 *   is a commit's acknowledgement (its WAL group's promise, the backlog and
 *   telemetry checks).
 *
 * The queue's engine pages job records and keeps its other values in
 * memory, packed or in its value arena: `PAGE=1` opens the engine so
 * (`pageValues` of `j/`; the bench's keys are not job records), `VALUE`
 * sets the values' bytes (200 by default: with PAGE=1 kept in the arena;
 * under 64 packed into strings), and `TOKEN=1` asks `committedToken` for
 * each batch's last put after its commit, as a chained step does for its
 * pointer.
 *
 * Run it at two N per mode and divide the difference of the counts by the
 * difference of N (batches), so start-up and most of the JIT's compiles
 * cancel out. Bundled, against a built checkout:
 * `npx esbuild bench/commit-joint-instructions.ts --bundle --packages=external --platform=node --format=esm --outfile=bench/.out/commit-joint-instructions.mjs`,
 * then `MODE=<separate|joint|apply> OPS=<1|5> N=<5000|25000> valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded --no-concurrent-recompilation bench/.out/commit-joint-instructions.mjs <checkout>`.
 * Without valgrind it prints the CPU per batch (a rough figure).
 */
import type { BatchOp } from "../runtime/engine/write-batch.js";
import { loadCheckout } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

type EngineModule = typeof import("../runtime/engine/engine.js");
type BatchModule = typeof import("../runtime/engine/write-batch.js");
type StoreModule = typeof import("../runtime/store/memory-store.js");

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const N = env("N", 10_000);
const OPS = env("OPS", 1);
const TURN = env("TURN", 50);
const CHUNK = env("CHUNK", TURN);
const MODE = process.env.MODE ?? "separate";
const PAGE = process.env.PAGE === "1";
const VALUE = env("VALUE", 200);
const TOKEN = process.env.TOKEN === "1";
if (MODE !== "separate" && MODE !== "joint" && MODE !== "apply") throw new Error(`MODE is separate, joint or apply, got ${MODE}`);
const dir = process.argv[2];
if (dir === undefined) throw new Error("name a built checkout");
const E = await loadCheckout<EngineModule>(dir, "dist/runtime/engine/engine.js");
const B = await loadCheckout<BatchModule>(dir, "dist/runtime/engine/write-batch.js");
const S = await loadCheckout<StoreModule>(dir, "dist/runtime/store/memory-store.js");

const engine = await E.Engine.open(new S.MemoryStore(), PAGE ? { pageValues: { keyPrefixes: ["j/"], cacheBytes: 0 } } : {});
const record = new Uint8Array(VALUE).fill(3);
const NO_GIVEN_VALUES: readonly number[] = [];
const keys: string[] = [];
for (let w = 0; w < TURN; w++) for (let j = 0; j < 64; j++) keys.push(`q/jobs/01JB${String(w).padStart(4, "0")}${String(j).padStart(18, "0")}`);

/** Puts writer `w`'s OPS ops of turn `s` into `batch`. */
function fill(batch: InstanceType<BatchModule["WriteBatch"]>, w: number, s: number): void {
  for (let k = 0; k < OPS; k++) batch.put(keys[w * 64 + ((s + k) % 64)]!, record);
}

/** One turn: its TURN batches committed as MODE says; resolves when they are durable. */
function turn(s: number): Promise<void> {
  let last: Promise<void> | undefined;
  if (MODE === "joint") {
    for (let c = 0; c < TURN; c += CHUNK) {
      const batch = new B.WriteBatch();
      for (let w = c; w < Math.min(TURN, c + CHUNK); w++) fill(batch, w, s);
      last = E.commitOwned(engine, batch.ops as BatchOp[], NO_GIVEN_VALUES);
    }
  } else {
    for (let w = 0; w < TURN; w++) {
      const batch = new B.WriteBatch();
      fill(batch, w, s);
      if (MODE === "apply") E.applyOwned(engine, batch.ops as BatchOp[], NO_GIVEN_VALUES);
      else last = E.commitOwned(engine, batch.ops as BatchOp[], NO_GIVEN_VALUES);
      if (TOKEN) engine.committedToken(keys[w * 64 + ((s + OPS - 1) % 64)]!, record);
    }
  }
  return last ?? engine.flush();
}

try {
  const started = process.cpuUsage();
  for (let s = 0; s < N / TURN; s++) await turn(s);
  const used = process.cpuUsage(started);
  console.log(
    `${dir}: MODE=${MODE} OPS=${OPS} N=${N} TURN=${TURN} CHUNK=${CHUNK} PAGE=${PAGE ? 1 : 0} VALUE=${VALUE} TOKEN=${TOKEN ? 1 : 0} load ${loadAverageText()}`,
  );
  console.log(
    `${N} batches, CPU ${(((used.user + used.system) * 1000) / N).toFixed(0)} ns per batch, ${engine.commits} engine commits, ${engine.stats.walPuts} WAL puts`,
  );
} finally {
  await engine.close();
}
