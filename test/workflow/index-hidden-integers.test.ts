/**
 * @module Records holding integers of 64 to 127, decoded while a prototype
 * holds an object under an index of 0 to 63 defined by hand, not
 * enumerable (as `Object.defineProperty` leaves it). msgpackr reads its
 * list of record layouts at `n - 64` for each such integer `n`, and that
 * list was empty: the read went on to the prototypes and took the object
 * for a layout, so the integer decoded as an object. The look for an index
 * before a decode sees only enumerable ones, so the manifest, job and
 * workflow value decoders misread such integers (a manifest refused as
 * corrupted, a job refused or its priority changed, a value of yours
 * changed) and so did everything read through them from the WAL and
 * segments. Their decoders now own every layout slot.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { decodeManifest, encodeManifest } from "../../runtime/engine/manifest.js";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { SMALL_INTEGER_JOB as JOB, SMALL_INTEGER_MANIFEST as MANIFEST, SMALL_INTEGER_VALUE as VALUE } from "../support/small-integer-records.js";
import { whileDefined } from "../support/polluted-prototype.js";
import { keysUnder } from "../support/store-keys.js";
import { until } from "../support/until.js";

/** Indexes whose object makes integers 64 + index misdecode: 0 is seen before the decode, whatever its descriptor. */
const INDEXES = ["1", "5", "63"];
/** Not enumerable, as a field defined by hand is; writable, so arrays still take their own elements there. */
const hidden = (index: string): Record<string, PropertyDescriptor> => ({
  [index]: { value: { name: "planted", read: undefined }, writable: true, enumerable: false },
});

/** What `read` returned while Object.prototype holds the hidden object at `index`. */
async function under<T>(index: string, read: () => T | Promise<T>): Promise<T> {
  let out: { value: T } | undefined;
  await whileDefined(hidden(index), async () => {
    out = { value: await read() };
  });
  return out!.value;
}

describe("records holding integers of 64 to 127, under an object at a non-enumerable index of Object.prototype", () => {
  for (const index of INDEXES) {
    it(`a manifest reads each integer as itself (Object.prototype["${index}"])`, async () => {
      const bytes = encodeManifest(MANIFEST);
      expect(await under(index, () => decodeManifest("manifest/70", bytes, 70))).toEqual(MANIFEST);
    });

    it(`a job record reads each integer as itself (Object.prototype["${index}"])`, async () => {
      const bytes = encodeJob(JOB);
      const job = await under(index, () => decodeJob("j/x", bytes));
      expect({ ...job, payload: Array.from(job.payload!) }).toEqual({ ...JOB, payload: [1, 2, 3] });
    });

    it(`a workflow value reads each integer as itself (Object.prototype["${index}"])`, async () => {
      const bytes = encodeValue(VALUE);
      expect(await under(index, () => decodeValue(bytes))).toEqual(VALUE);
    });

    for (const checkpointed of [false, true]) {
      const from = checkpointed ? "its segments" : "its WAL";
      it(`a queue reopened from ${from} reads its jobs, their priorities and payloads (Object.prototype["${index}"])`, async () => {
        const store = new MemoryStore();
        const first = await Queue.open(store, "app", checkpointed ? { engineOptions: { checkpointWalObjects: 1 } } : {});
        for (let i = 0; i < 4; i++) await first.enqueue("q", new Uint8Array([65, 69, 127]), { jobId: `j${i}`, priority: 64 + Number(index) });
        if (checkpointed) await until("a checkpoint covered the jobs", () => first.engineStats.walBytesSinceCheckpoint === 0);
        await first.close();
        expect((await keysUnder(store, "app/db/seg/")).length > 0, "segments written").toBe(checkpointed);
        const read = await under(index, async () => {
          const again = await Queue.open(store, "app");
          try {
            const job = await again.view().job("j0");
            const claimed = await again.claim("q");
            return { priority: job?.priority, payload: claimed === null ? undefined : Array.from(claimed.payload) };
          } finally {
            await again.close();
          }
        });
        expect(read).toEqual({ priority: 64 + Number(index), payload: [65, 69, 127] });
      });
    }
  }
});
