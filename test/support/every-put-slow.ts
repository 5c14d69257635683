/**
 * @module Makes every WAL put count as slow for the tests of the calling
 * scope (the engine then releases a stored object's commits by groups,
 * unless the store's puts contend), and restores the setting after them.
 */
import { afterAll, beforeAll } from "vitest";
import { releaseTuning } from "../../runtime/engine/wal-writer.js";

export function everyPutSlow(): void {
  const slowPutMs = releaseTuning.slowPutMs;
  beforeAll(() => {
    releaseTuning.slowPutMs = 0;
  });
  afterAll(() => {
    releaseTuning.slowPutMs = slowPutMs;
  });
}
