/**
 * @module Benchmark: how long a memtable freeze holds the event loop. Fills
 * a writer's state (`LayeredState`) to its memtable's keys with engine-commit's
 * keys and packed 64 B values, then times the write that freezes it, and each
 * idle turn and write after it until the frozen memtable's run is made
 * (engines that build the run inside the freeze have nothing after it).
 *
 * Run: npx tsx bench/memtable-freeze.ts
 * Env: KEYS (memtable keys, 262144), ROUNDS (5), VALUE_BYTES (64).
 */
import { LayeredState } from "../runtime/engine/layered-state.js";
import { packValue } from "../runtime/engine/paged-value.js";

const env = (name: string, dflt: number) => (process.env[name] === undefined ? dflt : Number(process.env[name]));
const KEYS = env("KEYS", 262_144);
const ROUNDS = env("ROUNDS", 5);
const VALUE_BYTES = env("VALUE_BYTES", 64);

/** Entries of a frozen memtable left to copy (0 for an engine that has none). */
function frozenLeft(state: LayeredState): number {
  const v = (state.layout as unknown as Record<string, unknown>).frozen;
  return typeof v === "number" ? v : 0;
}

const value = new Uint8Array(VALUE_BYTES).fill(7);
const key = (i: number) => `bench/${i % 256}/${Math.floor(i / 256)}`;
console.log(`memtable-freeze: KEYS=${KEYS} ROUNDS=${ROUNDS} VALUE_BYTES=${VALUE_BYTES}, node ${process.version}`);
for (let round = 0; round < ROUNDS; round++) {
  const state = new LayeredState({ memtableKeys: KEYS });
  for (let i = 0; i < KEYS - 1; i++) state.set(key(i), packValue(key(i), value));
  const last = key(KEYS - 1);
  const t0 = performance.now();
  state.set(last, packValue(last, value));
  const freezing = performance.now() - t0;
  // After it: writes of new keys (each copies its share) between idle turns (each copies a slice).
  let longestTurn = 0;
  let longestWrite = 0;
  let turns = 0;
  let writes = 0;
  const started = performance.now();
  while (frozenLeft(state) > 0) {
    const t1 = performance.now();
    await new Promise((resolve) => setImmediate(resolve));
    longestTurn = Math.max(longestTurn, performance.now() - t1);
    turns++;
    for (let w = 0; w < 64; w++, writes++) {
      const t2 = performance.now();
      state.set(`next/${round}/${writes}`, packValue("", value));
      longestWrite = Math.max(longestWrite, performance.now() - t2);
    }
  }
  console.log(
    `round ${round + 1}: the freezing write ${freezing.toFixed(1)} ms; then ${turns} idle turns (longest ${longestTurn.toFixed(1)} ms) and ${writes} writes (longest ${longestWrite.toFixed(2)} ms) over ${(performance.now() - started).toFixed(0)} ms until the run was made; ${state.runCount} runs`,
  );
}
