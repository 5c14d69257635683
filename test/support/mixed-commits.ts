/**
 * @module A commit workload for engine tests that mirror the engine in a
 * plain map: commit `i` writes four keys of 40 (one in five a delete), so
 * successive commits overwrite and delete each other's keys across runs.
 */
import { WriteBatch, type Engine } from "taquba";

/** Commits the `i`-th batch to `engine` and applies it to `model`. */
export function mixedCommits(engine: Engine, model: Map<string, string>): (i: number) => Promise<void> {
  return async (i) => {
    const b = new WriteBatch();
    for (let j = 0; j < 4; j++) {
      const key = `k/${(i * 7 + j * 3) % 40}`;
      if ((i + j) % 5 === 0) {
        b.delete(key);
        model.delete(key);
      } else {
        b.put(key, new TextEncoder().encode(`${key}@${i}`));
        model.set(key, `${key}@${i}`);
      }
    }
    await engine.commit(b);
  };
}
