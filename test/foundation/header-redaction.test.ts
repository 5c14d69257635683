/**
 * @module The headers a step's log record and span show (`redactHeaders`):
 * every header the job has, its sensitive values replaced, and nothing a
 * polluted `Object.prototype` holds. A header named `__proto__` (a JSON body
 * parsed into headers makes one) is a header like any other: assigned to a
 * plain object it would set the copy's prototype and vanish from the log.
 */
import { describe, expect, it } from "vitest";
import { REDACTED, redactHeaders } from "../../runtime/logger.js";
import { withPolluted } from "../support/polluted-prototype.js";

const SENSITIVE = new Set(["authorization", "x-api-key"]);

describe("redactHeaders", () => {
  it("keeps a parsed __proto__ header as a header, in the job's order", () => {
    const headers = JSON.parse('{"x-trace":"t1","__proto__":"from-the-body","Authorization":"Bearer s3cr3t"}') as Record<string, string>;
    const out = redactHeaders(headers, SENSITIVE);
    expect(Object.keys(out)).toEqual(["x-trace", "__proto__", "Authorization"]);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toBe("from-the-body");
    expect(out.Authorization).toBe(REDACTED);
    expect(JSON.stringify(out)).toBe(`{"x-trace":"t1","__proto__":"from-the-body","Authorization":"${REDACTED}"}`);
    // The copy's prototype is not the header's value, nor anything a header could name.
    expect(Object.getPrototypeOf(out)).not.toBe("from-the-body");
  });

  it("redacts a __proto__ header named sensitive", () => {
    const headers = JSON.parse('{"__proto__":"token-in-a-header"}') as Record<string, string>;
    const out = redactHeaders(headers, new Set(["__proto__"]));
    expect(JSON.stringify(out)).toBe(`{"__proto__":"${REDACTED}"}`);
  });

  it("shows nothing a polluted Object.prototype holds, and still every header of the job", () => {
    const headers = JSON.parse('{"__proto__":"p","x-api-key":"k","region":"eu"}') as Record<string, string>;
    const out = withPolluted({ authorization: "leaked", "x-injected": "i", region: "polluted" }, () => {
      const copy = redactHeaders(headers, SENSITIVE);
      // Read while the prototype is still polluted: a name the job lacks reads as absent.
      expect(copy.authorization).toBeUndefined();
      expect(copy["x-injected"]).toBeUndefined();
      const seen: string[] = [];
      for (const k in copy) seen.push(k);
      expect(seen).toEqual(["__proto__", "x-api-key", "region"]);
      return copy;
    });
    expect(JSON.stringify(out)).toBe(`{"__proto__":"p","x-api-key":"${REDACTED}","region":"eu"}`);
  });

  it("leaves the job's headers as they were", () => {
    const headers = JSON.parse('{"__proto__":"p","authorization":"a"}') as Record<string, string>;
    redactHeaders(headers, SENSITIVE);
    expect(JSON.stringify(headers)).toBe('{"__proto__":"p","authorization":"a"}');
  });
});
