/**
 * @module A job's result and dedup records and a step's memo values read
 * while `Object.prototype` holds one of their field names, each way a
 * library may put one there (a plain value, a getter, a read-only field,
 * a setter). A result record holds either an output or an error and a
 * message, never both: the field it lacks read the prototype's value, so a
 * failed job's record missing its error text, or a record damaged to lose
 * its output, read as the prototype made it. Each record reads back as
 * written, and a record lacking a field is refused as damaged, whatever
 * the prototype holds.
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError } from "../../runtime/errors.js";
import { decodeDedup, decodeJobResult, encodeDedup, encodeJobResult, type JobResultRecord } from "../../runtime/jobs/job-codec.js";
import { Memo } from "../../runtime/workflow/memo/memo.js";
import { encodeValue } from "../../runtime/workflow/records/codec.js";
import { MemoryStore } from "../../runtime/index.js";
import { whileDefined } from "../support/polluted-prototype.js";

type Mode = "value" | "getter" | "read-only" | "setter";
const MODES: Mode[] = ["value", "getter", "read-only", "setter"];

/** `Object.prototype`'s field `name` as `mode` puts it there, planting `planted` where it reads as a value. */
function descriptor(mode: Mode, planted: unknown): PropertyDescriptor {
  if (mode === "value") return { value: planted, writable: true, enumerable: true };
  if (mode === "getter") return { get: () => planted };
  if (mode === "read-only") return { value: planted, writable: false };
  return { get: () => undefined, set: () => undefined };
}

/** What `read` returns while `Object.prototype` holds each of `names` as `mode` puts it, `planted` its value. */
async function readUnder<T>(mode: Mode, names: readonly string[], planted: unknown, read: () => T | Promise<T>): Promise<T> {
  let out: T | undefined;
  await whileDefined(Object.fromEntries(names.map((n) => [n, descriptor(mode, planted)])), async () => {
    out = await read();
  });
  return out as T;
}

/** Each of `names` as `o` holds it (own or not), read now: the reads of a caller under the pollution. */
const fieldsOf = (o: object, names: readonly string[]): Record<string, unknown> => Object.fromEntries(names.map((n) => [n, (o as Record<string, unknown>)[n]]));

const RESULT_FIELDS = ["incarnation", "status", "output", "error", "message"];
const SUCCEEDED: JobResultRecord = { incarnation: "i1", status: "succeeded", output: '{"total":3}' };
const FAILED: JobResultRecord = { incarnation: "i1", status: "failed", error: '{"code":"E"}', message: "card declined" };

describe("job and memo records under a polluted Object.prototype", () => {
  for (const mode of MODES) {
    it(`a job result record reads as written while Object.prototype holds its field names (${mode})`, async () => {
      for (const written of [SUCCEEDED, FAILED]) {
        const bytes = encodeJobResult(written);
        const got = await readUnder(mode, RESULT_FIELDS, "planted", () => fieldsOf(decodeJobResult(bytes, "jobs/results/q/r"), RESULT_FIELDS));
        expect(got).toEqual({ output: undefined, error: undefined, message: undefined, ...written });
      }
    });

    it(`a job result record lacking its output or error is refused as damaged (${mode})`, async () => {
      for (const damaged of [
        { incarnation: "i1", status: "succeeded" },
        { incarnation: "i1", status: "failed", message: "m" },
      ]) {
        const bytes = encodeValue(damaged);
        const read = await readUnder(mode, ["output", "error"], "planted", () => {
          try {
            return decodeJobResult(bytes, "jobs/results/q/r");
          } catch (e) {
            return e;
          }
        });
        expect(read).toBeInstanceOf(StoreCorruptedError);
      }
    });

    it(`a dedup record reads its own input hash, and one without it is refused (${mode})`, async () => {
      const hash = "ab".repeat(32);
      expect(await readUnder(mode, ["inputSha256"], "planted", () => decodeDedup(encodeDedup(hash), "jobs/dedup/q/r"))).toBe(hash);
      const damaged = encodeValue({});
      const read = await readUnder(mode, ["inputSha256"], "planted", () => {
        try {
          return decodeDedup(damaged, "jobs/dedup/q/r");
        } catch (e) {
          return e;
        }
      });
      expect(read).toBeInstanceOf(StoreCorruptedError);
    });

    it(`a memo value reads back as written, stored and read under the pollution (${mode})`, async () => {
      const memo = new Memo(new MemoryStore(), "memo", "run-1", 0);
      const value = { reply: "hi", note: "kept", tags: ["a", "b"], nested: { note: "inner" } };
      const names = ["reply", "note", "tags", "nested"];
      const computed = await readUnder(mode, names, "planted", () => memo.memoized("draft", async () => value));
      expect(computed).toBe(value);
      const read = await readUnder(mode, names, "planted", async () => {
        const v = (await memo.memoized("draft", async () => ({ reply: "recomputed" }))) as typeof value;
        // Read while polluted: every field the value holds is its own.
        return { ...fieldsOf(v, names), nestedNote: v.nested.note, tags: [...v.tags], keys: Object.keys(v) };
      });
      expect(read).toEqual({ ...value, nestedNote: "inner", keys: names });
    });
  }
});
