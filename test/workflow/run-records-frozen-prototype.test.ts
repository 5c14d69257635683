/**
 * @module A run whose headers are named as `Object.prototype`'s own fields
 * (`constructor`, `toString`) while those fields are read-only, as frozen
 * intrinsics make them: its records decode (the decoder's assignment of
 * such a key threw, and the run record was reported corrupted, with advice
 * to remove the store's data), and the run completes with its headers.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { enc, openEnv, runnerOf } from "./helpers.js";
import { whileReadOnly } from "../support/polluted-prototype.js";

const HEADERS = { constructor: "c", toString: "t", tenant: "a" };

describe("workflow records under read-only fields of Object.prototype", () => {
  it("decode a record with keys of those names to the same values", async () => {
    const value = { headers: HEADERS, list: [{ valueOf: 1 }], bytes: new Uint8Array([1, 2]) };
    const bytes = encodeValue(value);
    await whileReadOnly(["constructor", "toString", "valueOf"], async () => {
      const got = decodeValue(bytes) as typeof value;
      expect(got).toEqual(value);
      expect(Object.hasOwn(got.headers, "constructor")).toBe(true);
      expect(Object.getPrototypeOf(got.headers)).toBe(Object.prototype);
    });
  });

  it("run a workflow whose headers are named so, to completion with its headers", async () => {
    const seen: Record<string, string>[] = [];
    const env = await openEnv(
      runnerOf(async (step) => {
        seen.push({ ...step.headers });
        return StepOutcome.succeed(enc("ok"));
      }),
    );
    await whileReadOnly(["constructor", "toString"], async () => {
      await env.runtime.submit({ runId: "r1", input: enc("x"), options: { headers: HEADERS } });
      const end = await env.runtime.wait("r1");
      expect(end.outcome?.status).toBe("succeeded");
      expect({ ...end.outcome?.headers }).toEqual(HEADERS);
    });
    expect(seen).toEqual([HEADERS]);
    await env.stop();
  });
});
