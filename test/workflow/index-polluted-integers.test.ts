/**
 * @module Records holding integers of 64 to 127, decoded while
 * `Object.prototype` holds an object under an index of 0 to 63 (what
 * merging a parsed `{"__proto__": {"1": {...}}}` sets). msgpackr reads its
 * list of record layouts, empty, at `n - 64` for each such integer `n`, and
 * took the object found there for a layout: the integer decoded as an
 * object (a manifest's segment of 65 entries read as corrupted, a job's
 * priority or a value of yours changed), with no field lost for the
 * decoders' own-field count to notice. A plain index assigned there is
 * now seen before the decode, which then defines every field.
 */
import { describe, expect, it } from "vitest";
import { decodeManifest, encodeManifest } from "../../runtime/engine/manifest.js";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { SMALL_INTEGER_JOB as JOB, SMALL_INTEGER_MANIFEST as MANIFEST, SMALL_INTEGER_VALUE as VALUE } from "../support/small-integer-records.js";
import { withPolluted } from "../support/polluted-prototype.js";

/** Indexes whose object makes integers 64 + index misdecode; the highest such index, and one past it. */
const INDEXES = ["0", "1", "2", "63", "64"];
const planted = (index: string) => ({ [index]: { name: "planted", read: undefined } });

describe("records holding integers of 64 to 127, under an object at an index of Object.prototype", () => {
  for (const index of INDEXES) {
    it(`decode each integer as itself (Object.prototype["${index}"])`, () => {
      const manifest = encodeManifest(MANIFEST);
      const job = encodeJob(JOB);
      const value = encodeValue(VALUE);
      const read = withPolluted(planted(index), () => ({
        manifest: decodeManifest("manifest/70", manifest, 70),
        job: decodeJob("j/x", job),
        value: decodeValue(value),
      }));
      expect(read.manifest).toEqual(MANIFEST);
      expect({ ...read.job, payload: Array.from(read.job.payload!) }).toEqual({ ...JOB, payload: [1, 2, 3] });
      expect(read.value).toEqual(VALUE);
    });
  }
});
