/**
 * @module Refusals of what a store is given that no test asserted until
 * now: a store URL past its length bound (refused without being shown: it
 * may carry credentials), a fragment on a cloud URL, latency that is no
 * finite duration, an S3 client without send() and an Azure credential
 * without getToken(). Each is a ValidationError saying what was wrong.
 */
import { describe, expect, it } from "vitest";
import { AzureBlobStore, MemoryStore, S3Store, ValidationError, openStore, withLatency } from "taquba";

function refusal(make: () => unknown): ValidationError {
  try {
    make();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return err as ValidationError;
  }
  throw new Error("it was taken");
}

describe("store refusals", () => {
  it("a store URL past 8192 characters is refused by its length, without showing it", () => {
    const secret = "s3://KEY:SECRET@bucket/";
    const url = secret + "p".repeat(8192);
    const err = refusal(() => openStore(url, { env: {} }));
    expect(err.message).toContain(`a store URL is at most 8192 characters, got one of ${url.length}`);
    expect(err.message).toContain("memory://, file:///absolute/dir or s3://bucket/prefix");
    expect(err.message).not.toContain("SECRET");
    // At the bound it is read as a URL (this one names a memory store wrongly, and says so).
    const atBound = `memory://${"x".repeat(8192 - "memory://".length)}`;
    expect(refusal(() => openStore(atBound, { env: {} })).message).toContain("memory:// takes no host, path or options");
  });

  it.each([
    ["gs://bucket/p#part", "gs:// URLs take no fragment"],
    ["azure://acct/box/p#part", "azure:// URLs take no fragment"],
    ["file:///tmp/x#part", "file URLs take no options"],
  ])("%j is refused: %s", (url, why) => {
    const err = refusal(() => openStore(url, { env: {} }));
    expect(err.message).toContain(`invalid store URL`);
    expect(err.message).toContain(why);
  });

  it.each([
    [{ ms: Number.NaN }, "ms=NaN"],
    [{ ms: -1 }, "ms=-1"],
    [{ ms: Number.POSITIVE_INFINITY }, "ms=Infinity"],
    [{ ms: "5" }, 'ms="5" (a string)'],
    [{ ms: 1, jitterMs: Number.NEGATIVE_INFINITY }, "jitterMs=-Infinity"],
    [{ ms: 1, jitterMs: -0.5 }, "jitterMs=-0.5"],
  ])("withLatency(%j) is refused naming the value", (opts, shown) => {
    const err = refusal(() => withLatency(new MemoryStore(), opts as never));
    expect(err.message).toContain("withLatency: ms and jitterMs must be finite numbers >= 0");
    expect(err.message).toContain(shown);
  });

  it("an S3 client without send() and an Azure credential without getToken() are refused naming the option", () => {
    const s3 = refusal(() => new S3Store({ bucket: "bucket", client: { sent: () => undefined } as never }));
    expect(s3.message).toMatch(/S3StoreOptions\.client must be an S3Client \(with send\(\)\), got an object/);
    const azure = refusal(() => new AzureBlobStore({ container: "box", account: "acct", credential: { token: "t" } as never }));
    expect(azure.message).toMatch(/AzureBlobStoreOptions\.credential must be a token credential \(with getToken\(\)\), got an object/);
  });
});
