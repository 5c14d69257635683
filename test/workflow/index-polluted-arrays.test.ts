/**
 * @module Records holding lists, read and written while `Object.prototype`
 * or `Array.prototype` holds a field named as a list index ("0", "1", ...):
 * a setter, a getter alone, or a read-only value. The MessagePack decoder
 * fills each list it makes by assigning its indexes, and an assignment to
 * an index the list does not own yet goes to such a field: a setter took
 * the element (a step's first attempt, a group's first member, the queue's
 * pending count read the prototype's value instead), a getter or read-only
 * field made the decode throw and the record read as damaged. Encoders that
 * pushed onto a list lost elements the same way. Each record reads back as
 * written, and is written whole.
 */
import { afterEach, describe, expect, it } from "vitest";
import { decodeHistory, decodeStats, encodeHistory, encodeStats, type JobAttempt } from "../../runtime/queue/record.js";
import { decodeManifest, encodeManifest, type GroupManifest } from "../../runtime/workflow/groups/group-records.js";
import { checkMembers } from "../../runtime/workflow/groups/run-group.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { decodeStepRecord, encodeStepRecord, type StepRecord, stepHistoryKey } from "../../runtime/workflow/runs/history-records.js";

type Mode = "setter" | "getter" | "read-only";
const MODES: Mode[] = ["setter", "getter", "read-only"];
const PROTOTYPES = [
  ["Object.prototype", Object.prototype],
  ["Array.prototype", Array.prototype],
] as const;

let taken = 0;

/** `Object.prototype` or `Array.prototype` given field `index` as `mode` puts it, until `restore`. */
function pollute(proto: object, index: string, mode: Mode): void {
  const d: PropertyDescriptor =
    mode === "setter"
      ? {
          get: () => undefined,
          set: () => {
            taken++;
          },
        }
      : mode === "getter"
        ? { get: () => "planted" }
        : { value: "planted", writable: false };
  Object.defineProperty(proto, index, { ...d, configurable: true });
}

function restore(proto: object, index: string): void {
  delete (proto as Record<string, unknown>)[index];
  // An index defined on Array.prototype (itself an array) grew its length; a delete leaves that.
  if (proto === Array.prototype) Array.prototype.length = 0;
}

afterEach(() => {
  for (const [, proto] of PROTOTYPES) for (const i of ["0", "1", "4", "5", "1000"]) restore(proto, i);
});

/** `o` as JSON, byte arrays as lists: what a reader of every field and element sees. */
const seen = (o: unknown): string => JSON.stringify(o, (_k, v) => (v instanceof Uint8Array ? Array.from(v) : v));

/** `read()` seen while `proto` holds `index` as `mode` puts it; or the error it threw, as text. */
function seenUnder(proto: object, index: string, mode: Mode, read: () => unknown): string {
  pollute(proto, index, mode);
  try {
    return seen(read());
  } catch (e) {
    return `threw ${String(e)}`;
  } finally {
    restore(proto, index);
  }
}

const STEP: StepRecord = {
  step: 2,
  name: "charge",
  payloadBytes: 5,
  attempts: [
    { attempt: 1, startedAtMs: 1, endedAtMs: 2, outcome: "retried", error: "boom", stack: "at x" },
    { attempt: 2, startedAtMs: 3, endedAtMs: 4, outcome: "continued" },
  ],
  attemptsDropped: 0,
  memoKeys: ["a", "b"],
  memoKeysWritten: 2,
  kvPuts: ["k"],
  kvDeletes: [],
  kvEffects: 1,
};
const MANIFEST: GroupManifest = {
  groupId: "g",
  createdAtMs: 3,
  options: { headers: { tenant: "a" } },
  members: [
    { key: "m1", input: new Uint8Array([1]) },
    { key: "m2", input: new Uint8Array([2]) },
  ],
};
const HISTORY: JobAttempt[] = [
  { attempt: 1, recordedAt: 5, outcome: "retried", error: "boom" },
  { attempt: 2, claimedAt: 6, recordedAt: 7, outcome: "completed" },
];
const STATS = { pending: 4, scheduled: 3, claimed: 2, done: 1, dead: 9 };

describe("records with lists under an index field on a prototype", () => {
  for (const [protoName, proto] of PROTOTYPES) {
    for (const mode of MODES) {
      for (const index of ["0", "1"]) {
        it(`read as written while ${protoName} holds "${index}" (${mode})`, () => {
          taken = 0;
          const step = encodeStepRecord(STEP);
          const manifest = encodeManifest(MANIFEST);
          const history = encodeHistory(HISTORY);
          const stats = encodeStats(STATS);
          const value = encodeValue({ list: [1, [2, 3], { x: [4] }] });
          expect(seenUnder(proto, index, mode, () => decodeStepRecord(step, "h/2"))).toBe(seen(decodeStepRecord(step, "h/2")));
          expect(seenUnder(proto, index, mode, () => decodeManifest(manifest, "g/x"))).toBe(seen(MANIFEST));
          expect(seenUnder(proto, index, mode, () => decodeHistory("a/x", history))).toBe(seen(HISTORY));
          expect(seenUnder(proto, index, mode, () => decodeStats("s/x", stats))).toBe(seen(STATS));
          expect(seenUnder(proto, index, mode, () => decodeValue(value))).toBe(seen({ list: [1, [2, 3], { x: [4] }] }));
          // Found before the decode, no setter is called; an index above 0 on Object.prototype only after (see `prototypesHoldAnIndex`).
          if (proto === Array.prototype || index === "0") expect(taken).toBe(0);
        });
      }

      it(`write a step's attempts with their error and stack while ${protoName} holds "4" and "5" (${mode})`, () => {
        let bytes: Uint8Array | undefined;
        pollute(proto, "4", mode);
        pollute(proto, "5", mode);
        try {
          bytes = encodeStepRecord(STEP);
        } catch {
          bytes = undefined;
        } finally {
          restore(proto, "4");
          restore(proto, "5");
        }
        expect(bytes).toBeDefined();
        expect(seen(decodeStepRecord(bytes!, "h/2").attempts)).toBe(seen(STEP.attempts));
      });
    }

    it(`keep a group's first member while ${protoName} holds a setter named "0"`, () => {
      const given = MANIFEST.members.map((m) => ({ key: m.key, input: m.input }));
      pollute(proto, "0", "setter");
      let members: string;
      try {
        members = seen(checkMembers(given));
      } catch (e) {
        members = `threw ${String(e)}`;
      } finally {
        restore(proto, "0");
      }
      expect(members).toBe(seen(MANIFEST.members));
    });
  }

  it("name a step's history entry by its step after a setter on Object.prototype took an index of the key cache", () => {
    // Step 1000 is the first to fill the cache's index 1000 in this file.
    pollute(Object.prototype, "1000", "setter");
    let during: string;
    try {
      during = stepHistoryKey("q", "r", 1000);
    } finally {
      restore(Object.prototype, "1000");
    }
    expect(during).toBe("workflow/history/q/r/0000001000".replace("workflow/", during.slice(0, during.indexOf("history/"))));
    expect(stepHistoryKey("q", "r", 1000)).toBe(during);
    expect(stepHistoryKey("q", "r", 1000).endsWith("/r/0000001000")).toBe(true);
  });
});
