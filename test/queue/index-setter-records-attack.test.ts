/**
 * @module Queue records holding arrays decoded while a prototype holds an
 * index ("0") as a setter or a read-only field: msgpackr assigns each
 * element of an array it builds, so a setter took a queue's pending count
 * (its stats are an array of five counts, read back as `undefined` and
 * written back as NaN at the next commit) or a job's first attempt, and
 * the decode's fallback built its arrays the same way. Each reads whole.
 *
 * Only the decode runs while the index is defined: an index setter takes
 * every `push` of the process, the test's too.
 */
import { describe, expect, it } from "vitest";
import { underIndexes } from "../support/polluted-prototype.js";
import { decodeHistory, decodeStats, encodeHistory, encodeStats, type JobAttempt } from "../../runtime/queue/record.js";

const HISTORY: JobAttempt[] = [
  { attempt: 1, recordedAt: 10, outcome: "retried", error: "boom" },
  { attempt: 2, recordedAt: 20, outcome: "completed" },
];

const POLLUTIONS: [string, object, PropertyDescriptor][] = [
  ["a setter on Array.prototype", Array.prototype, { get: () => 99, set: () => {} }],
  ["a setter on Object.prototype", Object.prototype, { get: () => 99, set: () => {} }],
  ["a read-only field on Object.prototype", Object.prototype, { value: 99, writable: false }],
];

describe('queue records with arrays decoded under an index "0" on a prototype', () => {
  for (const [what, target, descriptor] of POLLUTIONS) {
    it(`reads a queue's counts whole under ${what}`, () => {
      const bytes = encodeStats({ pending: 7, scheduled: 1, claimed: 2, done: 3, dead: 4 });
      const got = underIndexes(target, ["0"], descriptor, () => JSON.stringify(decodeStats("s/q", bytes)));
      expect(got.error).toBeUndefined();
      expect(JSON.parse(got.value!)).toEqual({ pending: 7, scheduled: 1, claimed: 2, done: 3, dead: 4 });
    });

    it(`reads a job's first attempt under ${what}`, () => {
      const bytes = encodeHistory(HISTORY);
      const got = underIndexes(target, ["0"], descriptor, () => JSON.stringify(decodeHistory("h/1", bytes).map((a) => ({ ...a }))));
      expect(got.error).toBeUndefined();
      expect(JSON.parse(got.value!)).toEqual(HISTORY);
    });
  }
});
