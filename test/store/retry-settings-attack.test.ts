/**
 * @module A store's retry settings given values JSON cannot show: a bigint,
 * a symbol, NaN, -0. Each of S3Store, GcsStore and AzureBlobStore refuses
 * them with a ValidationError that names every value as it was given,
 * never a TypeError from building the message.
 */
import { describe, expect, it } from "vitest";
import { S3Store, ValidationError } from "taquba";
import { retrySettings } from "../../runtime/store/request-retry.js";

function refusal(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error("not refused");
}

describe("retry settings JSON cannot show", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ maxAttempts: 5n }, /got maxAttempts 5n \(a bigint\), baseDelayMs 50, maxDelayMs 2000$/],
    [{ maxAttempts: Number.NaN }, /got maxAttempts NaN,/],
    [{ maxAttempts: Symbol("s") }, /got maxAttempts a symbol,/],
    [{ maxAttempts: -0 }, /got maxAttempts -0,/],
    [{ baseDelayMs: 5n }, /baseDelayMs 5n \(a bigint\)/],
    [{ maxDelayMs: Number.POSITIVE_INFINITY }, /maxDelayMs Infinity$/],
    [{ baseDelayMs: "50" }, /baseDelayMs "50" \(a string\)/],
  ];

  it.each(cases)("S3Store refuses retry %o with a ValidationError naming the value", (retry, shown) => {
    const e = refusal(() => new S3Store({ bucket: "my-bucket", retry } as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toMatch(/^S3Store: retry\.maxAttempts must be an integer from 1 to 100 and delays finite numbers >= 0/);
    expect(e.message).toMatch(shown);
  });

  it("the GCS and Azure stores' shared check refuses them the same way", () => {
    for (const store of ["GcsStore", "AzureBlobStore"]) {
      for (const [retry, shown] of cases) {
        const e = refusal(() => retrySettings(store, retry as never));
        expect(e).toBeInstanceOf(ValidationError);
        expect(e.message).toMatch(shown);
      }
    }
  });
});
