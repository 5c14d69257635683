/**
 * @module Job records as the previous release stored them: the bytes of a
 * chained step's record and of a record with every field and 17 headers
 * (both maps past a fixmap's 15 entries), taken from that release's
 * encoder. They still decode to the same record, and the direct encoder
 * still writes exactly those bytes, in arrays of their own and as views of
 * the shared chunk wherever a record falls in it.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { decodeJob, encodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { packRecord } from "../../runtime/queue/record-pack.js";

const STEP_BYTES =
  "i6JpZLowMU05MTNKOEZTQ1dWS0VHS0NQNjdTSERBUKVxdWV1Za53b3JrZmxvdy1zdGVwc6VzdGF0ZadjbGFpbWVko3NlcbowMU05MTNKOEZTQ1dWS0VHS0NQNjdTSERBUahwcmlvcml0ec0D6KdwYXlsb2FkxAQBAgMEp2hlYWRlcnOCr3dvcmtmbG93LnJ1bl9pZLowMU05MTNKOEJUMktGUUNXWVQwNjg3N01XQq13b3JrZmxvdy5zdGVwoTaoYXR0ZW1wdHMBq21heEF0dGVtcHRzA6plbnF1ZXVlZEF0y0J6JCOSH5AAqWNsYWltZWRBdMtCeiQjkh+QAA==";
const FULL_BYTES =
  "3gAXomlkpmpvYi3DqaVxdWV1ZaFxpXN0YXRlpGRlYWSjc2VxujAxTTkxM0o4RlNDV1ZLRUdLQ1A2N1NIREFRqHByaW9yaXR5A6dwYXlsb2FkxACqcGF5bG9hZFJlZqVyZWYvMatwYXlsb2FkU2l6Zc4AARFwp2hlYWRlcnPeABGiaDCidjCiaDGidjGiaDKidjKiaDOidjOiaDSidjSiaDWidjWiaDaidjaiaDeidjeiaDiidjiiaDmidjmjaDEwo3YxMKNoMTGjdjExo2gxMqN2MTKjaDEzo3YxM6NoMTSjdjE0o2gxNaN2MTWjaDE2o3YxNqhhdHRlbXB0cwOrbWF4QXR0ZW1wdHMDqmVucXVldWVkQXTLQnokI5IfkACpY2xhaW1lZEF0y0J6JCOSH6AApXJ1bkF0y0J6JCOSH7AAp3dva2VuQXTLQnokI5IfwACoYXR0YWNoZWTEAQmrY29tcGxldGVkQXTLP/gAAAAAAACoZmFpbGVkQXTLQnokI5If0ACpbGFzdEVycm9ypGJvb22oZGVkdXBLZXmhZKtkZWJvdW5jZUtleaFir2NhbmNlbFJlcXVlc3RlZMOrcmV0YWluVW50aWzLQnokI5If4AA=";

const stepRecord = (): JobRecord => ({
  id: "01M913J8FSCWVKEGKCP67SHDAP",
  queue: "workflow-steps",
  state: "claimed",
  seq: "01M913J8FSCWVKEGKCP67SHDAQ",
  priority: 1000,
  payload: new Uint8Array([1, 2, 3, 4]),
  headers: { "workflow.run_id": "01M913J8BT2KFQCWYT06877MWB", "workflow.step": "6" },
  attempts: 1,
  maxAttempts: 3,
  enqueuedAt: 1796407370233,
  claimedAt: 1796407370233,
});

const fullRecord = (): JobRecord => {
  const headers: Record<string, string> = {};
  for (let i = 0; i < 17; i++) headers[`h${i}`] = `v${i}`;
  return {
    id: "job-é",
    queue: "q",
    state: "dead",
    seq: "01M913J8FSCWVKEGKCP67SHDAQ",
    priority: 3,
    payload: new Uint8Array(0),
    payloadRef: "ref/1",
    payloadSize: 70000,
    headers,
    attempts: 3,
    maxAttempts: 3,
    enqueuedAt: 1796407370233,
    claimedAt: 1796407370234,
    runAt: 1796407370235,
    wokenAt: 1796407370236,
    attached: new Uint8Array([9]),
    completedAt: 1.5,
    failedAt: 1796407370237,
    lastError: "boom",
    dedupKey: "d",
    debounceKey: "b",
    cancelRequested: true,
    retainUntil: 1796407370238,
  };
};

const hex = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
const stored = (b64: string) => new Uint8Array(Buffer.from(b64, "base64"));
const CASES = [
  { name: "a chained step's record", make: stepRecord, bytes: stored(STEP_BYTES) },
  { name: "a record with every field and 17 headers", make: fullRecord, bytes: stored(FULL_BYTES) },
];

describe("job records stored by the previous release", () => {
  it.each(CASES)("reads $name back as it was written", ({ make, bytes }) => {
    const back = decodeJob("j/x", bytes);
    expect(back).toEqual(make());
  });

  it.each(CASES)("writes $name to the same bytes, in an array of its own and as a shared view", ({ make, bytes }) => {
    expect(hex(encodeJob(make()))).toBe(hex(bytes));
    expect(hex(encodeJob(make(), true))).toBe(hex(bytes));
    expect(hex(encodeJob(decodeJob("j/x", bytes), true))).toBe(hex(bytes));
  });

  it("writes the same bytes wherever a record falls in the shared chunk, its end included", () => {
    // Fillers of every length from 0 to 96 payload bytes move the next record through every offset of the
    // chunk's last bytes, including a map16 record whose two-byte header move crosses the chunk's end.
    const full = fullRecord();
    const step = stepRecord();
    const views: Uint8Array[] = [];
    for (let i = 0; i < 4000; i++) {
      packRecord({ id: "f", payload: new Uint8Array(i % 97) }, true);
      views.push(packRecord(i % 2 === 0 ? step : full, true)!);
    }
    const buffers = new Set(views.map((v) => v.buffer));
    expect(buffers.size).toBeGreaterThan(10);
    for (const [i, v] of views.entries()) expect(hex(v), `record ${i}`).toBe(hex(CASES[i % 2]!.bytes));
  });

  it("writes a map of 16 entries ending in the chunk's last bytes as the general encoder does", () => {
    // The record codec's general encoder, with its options.
    const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
    // A float last: its nine bytes are reserved exactly, so the map can end in the chunk's last byte, where
    // map16's two more header bytes no longer fit.
    const wide: Record<string, unknown> = {};
    for (let i = 0; i < 15; i++) wide[`a${i}`] = true;
    wide.z = 1.5;
    const expected = hex(new Uint8Array(general.pack(wide)));
    const chunkBytes = 16 * 1024;
    for (let start = chunkBytes - 120; start <= chunkBytes - 60; start++) {
      // A record past the chunk's size is written in a larger array, which is then let go for a fresh chunk.
      packRecord({ p: new Uint8Array(20_000) }, true);
      // Fillers of known sizes (a one-entry map of a bin: 6 bytes and its payload) up to `start`.
      for (let left = start; left > 0; ) {
        const size = left > 2000 ? 1500 : left;
        const filler = packRecord({ p: new Uint8Array(size - 6) }, true)!;
        expect(filler.byteLength).toBe(size);
        left -= size;
      }
      const out = packRecord(wide, true)!;
      expect(hex(out), `starting at ${start}`).toBe(expected);
    }
  });
});
