/**
 * @module The hex SHA-256 that run records, memo keys and run-result keys
 * store: the same digests before and after the one-shot hash replaced the
 * `Hash` object (stored keys and input hashes must not change).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../runtime/workflow/records/codec.js";

const viaHashObject = (x: Uint8Array | string) => createHash("sha256").update(x).digest("hex");

describe("sha256Hex", () => {
  it("gives the standard digests of bytes and of strings as UTF-8", () => {
    expect(sha256Hex(new Uint8Array())).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex(new TextEncoder().encode("abc"))).toBe(sha256Hex("abc"));
  });

  it("hashes what a Hash object hashed: views into larger buffers, non-ASCII text and lone surrogates", () => {
    const big = new Uint8Array(1000).map((_, i) => (i * 31) & 0xff);
    const view = big.subarray(17, 530);
    for (const x of [view, big, "é日本\u{1F600}", "a\uD800b", "\uDFFF", "x".repeat(100_000)]) expect(sha256Hex(x)).toBe(viaHashObject(x));
  });
});
