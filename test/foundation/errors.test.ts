import { describe, expect, it } from "vitest";
import { FencedError, PreconditionFailedError, StoreCorruptedError, TaqubaError, ValidationError } from "taquba";

describe("error tree", () => {
  it("sets name, code and retryable, and keeps instanceof along the hierarchy", () => {
    const e = new PreconditionFailedError("wal/1");
    expect(e).toBeInstanceOf(PreconditionFailedError);
    expect(e).toBeInstanceOf(TaqubaError);
    expect(e).toBeInstanceOf(Error);
    expect(e).not.toBeInstanceOf(FencedError);
    expect(e.name).toBe("PreconditionFailedError");
    expect(e.code).toBe("PRECONDITION_FAILED");
    expect(e.retryable).toBe(false);
    expect(e.message).toContain("wal/1");
  });

  it("recognises errors made by another copy of the classes by their brand", () => {
    // A structurally identical class from a second copy of the package.
    class StoreCorruptedError2 extends TaqubaError {}
    Object.defineProperty(StoreCorruptedError2, "name", { value: "StoreCorruptedError" });
    const foreign = new StoreCorruptedError2("STORE_CORRUPTED", "x");
    expect(foreign).toBeInstanceOf(StoreCorruptedError);
    expect({}).not.toBeInstanceOf(TaqubaError);
    expect(new Error("plain")).not.toBeInstanceOf(TaqubaError);
  });

  it("lists every validation issue in the message", () => {
    const e = new ValidationError("bad input", ["/a must be a string", "/b is required"]);
    expect(e.issues).toHaveLength(2);
    expect(e.message).toContain("/a must be a string");
    expect(e.message).toContain("/b is required");
  });
});

describe("a caller's thrown message inside ours", () => {
  it("is cut when long, saying how long it was, and never ends in half a surrogate pair", async () => {
    const { MemoryStore, Queue } = await import("taquba");
    const refusal = async (message: string): Promise<string> => {
      const options = {
        get flushIntervalMs(): number {
          throw new Error(message);
        },
      };
      const err = await Queue.open(new MemoryStore(), "jobs", options).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      return (err as ValidationError).message;
    };
    const short = await refusal("the getter broke");
    expect(short).toContain("reading OpenOptions.flushIntervalMs threw: the getter broke");
    const long = await refusal("x".repeat(10_000_000));
    expect(long.length).toBeLessThan(2_000);
    expect(long).toContain(`${"x".repeat(1000)}… [cut: first 1000 of 10000000 characters kept]`);
    // A pair whose high half would be the last character kept is cut before it.
    const pairs = await refusal(`${"y".repeat(999)}${"😀".repeat(600)}`);
    expect(pairs).toContain(`${"y".repeat(999)}… [cut: first 999 of 2199 characters kept]`);
  });
});
