/**
 * @module Records holding integers of 64 to 127 (the ones msgpackr writes
 * as single bytes that its record layouts also use): a manifest, a job
 * record and a workflow value, for the tests that decode them while a
 * prototype holds something at an index.
 */
import type { Manifest } from "../../runtime/engine/manifest.js";
import type { JobRecord } from "../../runtime/queue/record.js";

/** A manifest with 64, 65, 66, 69, 70, 100 and 127 in its numbers. */
export const SMALL_INTEGER_MANIFEST: Manifest = {
  id: 70,
  epoch: 1,
  walNext: 100,
  segments: [
    { name: "seg/1", bytes: 6488, entries: 65, firstKey: "a", lastKey: "b", run: 64 },
    { name: "seg/2", bytes: 127, entries: 66, firstKey: "c", lastKey: "d", run: 127 },
  ],
  fences: [66, 69],
  createdAt: 1,
};

/** A job record with 64, 65, 66, 69 and 127 in its numbers. */
export const SMALL_INTEGER_JOB: JobRecord = {
  id: "01HAAAAAAAAAAAAAAAAAAAAAAA",
  queue: "q",
  state: "pending",
  seq: "01HAAAAAAAAAAAAAAAAAAAAAAA",
  priority: 65,
  payload: new Uint8Array([1, 2, 3]),
  attempts: 66,
  maxAttempts: 127,
  enqueuedAt: 64,
  runAt: 69,
};

/** A workflow value with integers of 64 to 127 at every depth. */
export const SMALL_INTEGER_VALUE = { count: 65, list: [64, 65, 66, 69, 100, 127], nested: { n: 126 } };
