/**
 * @module Records that are not what their writer wrote (not MessagePack, not
 * a map, a field missing or of the wrong type): job results and dedup
 * records, group manifests, retention markers. Each is StoreCorruptedError
 * naming the record's key and what it lacks; a sound record round-trips.
 */
import { pack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "taquba";
import { decodeDedup, decodeJobResult, encodeDedup, encodeJobResult } from "../../runtime/jobs/job-codec.js";
import { decodeManifest, encodeManifest } from "../../runtime/workflow/groups/group-records.js";
import { decodeMarkerValue, encodeMarkerValue } from "../../runtime/workflow/runs/terminal.js";

type Decode = (bytes: Uint8Array, key: string) => unknown;

/** Every kind of damage a decoder must refuse, each naming `key` and `lacks`. */
function expectRefused(decode: Decode, key: string, lacks: RegExp, wrongShapes: unknown[]): void {
  const refuse = (bytes: Uint8Array, why: RegExp | string) => {
    let err: unknown;
    try {
      decode(bytes, key);
    } catch (e) {
      err = e;
    }
    expect(err, String(why)).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe(key);
    expect((err as Error).message).toMatch(why);
  };
  refuse(new Uint8Array([0xc1]), /not MessagePack|lacks/); // 0xc1 is never valid MessagePack
  refuse(new Uint8Array(0), /not MessagePack|lacks/);
  refuse(pack("a string"), /not a map|lacks/);
  refuse(pack([1, 2]), /not a map|lacks/);
  refuse(pack(null), /not a map|lacks/);
  for (const shape of wrongShapes) refuse(pack(shape), lacks);
}

describe("corrupted records", () => {
  it("job result records", () => {
    const ok = { incarnation: "i1", status: "succeeded" as const, output: "{}" };
    expect(decodeJobResult(encodeJobResult(ok), "k")).toEqual(ok);
    const failed = { incarnation: "i1", status: "failed" as const, error: "{}", message: "no" };
    expect(decodeJobResult(encodeJobResult(failed), "k")).toEqual(failed);
    expectRefused(decodeJobResult, "jobs/results/q/run-1", /job result record lacks its status or value/, [
      {},
      { status: "succeeded", output: "{}" },
      { incarnation: "i1", status: "succeeded" },
      { incarnation: "i1", status: "succeeded", output: 5 },
      { incarnation: "i1", status: "failed", error: "{}" },
      { incarnation: "i1", status: "maybe", output: "{}" },
    ]);
  });

  it("job dedup records", () => {
    expect(decodeDedup(encodeDedup("ab"), "k")).toBe("ab");
    expectRefused(decodeDedup, "jobs/dedup/q/run-1", /job dedup record lacks its input hash/, [{}, { inputSha256: 7 }]);
  });

  it("group manifests", () => {
    const m = { groupId: "g", createdAtMs: 1, options: { headers: {} }, members: [{ key: "a", input: new Uint8Array([1]) }] };
    expect(decodeManifest(encodeManifest(m as never), "k")).toMatchObject({ groupId: "g", members: [{ key: "a" }] });
    expectRefused(decodeManifest, "workflow/groups/g", /group manifest lacks its id, options or members/, [
      {},
      { ...m, groupId: 1 },
      { ...m, createdAtMs: "now" },
      { ...m, options: null },
      { ...m, options: { headers: null } },
      { ...m, members: "a" },
      { ...m, members: [{ key: "a", input: "not bytes" }] },
      { ...m, members: [null] },
    ]);
  });

  it("retention markers", () => {
    const v = { token: "t", memoPrefix: "p" };
    expect(decodeMarkerValue(encodeMarkerValue(v as never), "k")).toMatchObject(v);
    expectRefused(decodeMarkerValue, "workflow/expiry/q/1", /retention marker lacks its token or memo prefix/, [
      {},
      { token: "t" },
      { memoPrefix: "p" },
      { token: 1, memoPrefix: "p" },
    ]);
  });
});
