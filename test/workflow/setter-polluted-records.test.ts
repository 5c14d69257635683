/**
 * @module Workflow records read while `Object.prototype` holds a setter
 * named as one of their fields or keys (a library defined an accessor
 * there). The decoder assigns each key of a map to a fresh object, and an
 * assignment calls an inherited setter instead of defining the field: the
 * run record lost its `runId` and read as corrupted, a run's headers lost
 * the header of that name. Every map now decodes to an object owning each
 * of its fields, and the setter is never called.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { decodeRunRecord, encodeRunRecord } from "../../runtime/workflow/records/records.js";
import { enc, openEnv, runnerOf } from "./helpers.js";
import { whileDefined } from "../support/polluted-prototype.js";

/** A setter on `Object.prototype` that keeps what it was given in `taken`, and a getter reading undefined. */
function swallowing(taken: unknown[]): PropertyDescriptor {
  return { get: () => undefined, set: (v: unknown) => taken.push(v) };
}

describe("workflow records under a setter on Object.prototype named as a field", () => {
  it("decode a value to objects owning every field, nested maps and maps in arrays included", async () => {
    const value = { runId: "r1", headers: { tenant: "a", region: "eu" }, list: [{ tenant: "b" }, 3], bytes: new Uint8Array([1, 2]) };
    const bytes = encodeValue(value);
    await whileDefined({ runId: swallowing([]), tenant: swallowing([]) }, async () => {
      const got = decodeValue(bytes) as typeof value;
      expect(Object.hasOwn(got, "runId")).toBe(true);
      expect(Object.hasOwn(got.headers, "tenant")).toBe(true);
      expect(Object.hasOwn(got.list[0] as object, "tenant")).toBe(true);
      expect(Object.getPrototypeOf(got.headers)).toBe(Object.prototype);
      expect(got).toEqual(value);
    });
  });

  it("decode a run record under setters named as its optional fields without calling them", async () => {
    const record = { runId: "r1", submittedAtMs: 1, inputSha256: "00", incarnation: "i1", headers: { a: "b" }, priority: 2, memoPrefix: "m" };
    const bytes = encodeRunRecord(record);
    const taken: unknown[] = [];
    await whileDefined({ priority: swallowing(taken), memoPrefix: swallowing(taken) }, async () => {
      const got = decodeRunRecord(bytes, "k");
      expect(Object.hasOwn(got, "priority") && Object.hasOwn(got, "memoPrefix")).toBe(true);
      expect({ ...got }).toMatchObject(record);
    });
    expect(taken).toEqual([]);
  });

  it("encode a run record under a setter named as its field with the field, so it reads back whole", async () => {
    const record = { runId: "r1", submittedAtMs: 1, inputSha256: "00", incarnation: "i1", headers: { a: "b" } };
    const taken: unknown[] = [];
    let bytes: Uint8Array = new Uint8Array(0);
    await whileDefined({ runId: swallowing(taken), incarnation: swallowing(taken) }, async () => {
      bytes = encodeRunRecord(record);
    });
    expect(taken).toEqual([]);
    expect({ ...decodeRunRecord(bytes, "k") }).toEqual(record);
  });

  it("run a workflow to completion with its headers, the setters keeping none of its fields", async () => {
    const seen: Record<string, string>[] = [];
    const env = await openEnv(
      runnerOf(async (step) => {
        seen.push({ ...step.headers });
        return StepOutcome.succeed(enc("ok"));
      }),
    );
    await whileDefined({ runId: swallowing([]), tenant: swallowing([]) }, async () => {
      await env.runtime.submit({ runId: "r1", input: enc("x"), options: { headers: { tenant: "a" } } });
      const end = await env.runtime.wait("r1");
      expect(end.outcome?.status).toBe("succeeded");
      expect({ ...end.outcome?.headers }).toEqual({ tenant: "a" });
    });
    expect(seen).toEqual([{ tenant: "a" }]);
    expect((await env.runtime.wait("r1")).outcome?.status).toBe("succeeded");
    await env.stop();
  });
});
