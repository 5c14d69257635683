/**
 * @module How long an incremental checkpoint takes while the event loop is
 * busy with other work, for two or more compiled checkouts, round by round
 * in one process (every checkout under the same load).
 *
 * Each argument is a checkout built with `npm run build` (its `dist/` is
 * loaded). Per round and checkout: an engine on a fresh MemoryStore with
 * automatic checkpoints off commits KEYS keys of 64-byte values (in batches
 * of 1,000) and checkpoints them once (untimed, to warm up); commits KEYS
 * more, then calls `checkpoint()` while a chain of turns
 * (`setImmediate`) each does TURN_WORK rounds of fixed CPU work (standing
 * in for claim loops, about 20 ms each when quiet). Reported per round: the
 * checkpoint's wall time, the busy turns that ran during it, and the time
 * one busy turn took (so a round on a loaded machine says so); at the end
 * the medians of the rounds after the first.
 *
 * Run: `npm run build` in each checkout, then
 * `KEYS=50000 ROUNDS=6 npx tsx bench/checkpoint-share-ab.ts <checkout A> <checkout B>`.
 */
import { createHash } from "node:crypto";
import { median } from "./support/percentile.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";
import { loadAverageText } from "./support/load-average.js";

const env = (k: string, d: number) => (process.env[k] === undefined ? d : Number(process.env[k]));
const KEYS = env("KEYS", 50_000);
const ROUNDS = env("ROUNDS", 6);
const TURN_WORK = env("TURN_WORK", 4_000);

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");
const mods: Taquba[] = [];
for (const d of dirs) mods.push(await loadCheckout(d));

const block = new Uint8Array(1024).fill(3);
/** Fixed CPU work: TURN_WORK hashes of 1 KiB. */
function busyWork(): void {
  for (let i = 0; i < TURN_WORK; i++) createHash("sha1").update(block).digest();
}

async function commitKeys(T: Taquba, engine: Awaited<ReturnType<Taquba["Engine"]["open"]>>, round: number): Promise<void> {
  const value = new Uint8Array(64).fill(round & 0xff);
  for (let at = 0; at < KEYS; at += 1000) {
    const b = new T.WriteBatch();
    for (let i = at; i < Math.min(KEYS, at + 1000); i++) b.put(`job/${round}/${String(i).padStart(8, "0")}`, value);
    await engine.commit(b);
  }
}

interface Round {
  checkpointMs: number;
  turns: number;
  turnMs: number;
}

async function measure(T: Taquba): Promise<Round> {
  const engine = await T.Engine.open(new T.MemoryStore(), { checkpointWalObjects: 0, checkpointWalBytes: 0 });
  try {
    await commitKeys(T, engine, 0);
    await engine.checkpoint();
    await commitKeys(T, engine, 1);
    let turns = 0;
    let busyMs = 0;
    let running = true;
    const turn = () => {
      if (!running) return;
      const t = performance.now();
      busyWork();
      busyMs += performance.now() - t;
      turns++;
      setImmediate(turn);
    };
    const t0 = performance.now();
    setImmediate(turn);
    await engine.checkpoint();
    const checkpointMs = performance.now() - t0;
    running = false;
    return { checkpointMs, turns, turnMs: turns > 0 ? busyMs / turns : 0 };
  } finally {
    await engine.close();
  }
}

console.log(`checkpoint-share-ab: ${KEYS} keys changed, busy turns of ${TURN_WORK} hashes of 1 KiB, ${ROUNDS} rounds; load ${loadAverageText()}`);
const rounds: Round[][] = dirs.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < dirs.length; i++) {
    const res = await measure(mods[i]!);
    rounds[i]!.push(res);
    console.log(
      `round ${r + 1} ${dirs[i]}: checkpoint ${res.checkpointMs.toFixed(0)} ms, ${res.turns} busy turns during it (${res.turnMs.toFixed(1)} ms each); load ${loadAverageText()}`,
    );
  }
}
for (let i = 0; i < dirs.length && ROUNDS > 1; i++) {
  const kept = rounds[i]!.slice(1);
  console.log(
    `median of rounds 2-${ROUNDS} ${dirs[i]}: checkpoint ${median(kept.map((x) => x.checkpointMs)).toFixed(0)} ms, ${median(kept.map((x) => x.turns))} busy turns, ${median(kept.map((x) => x.turnMs)).toFixed(1)} ms each`,
  );
}
