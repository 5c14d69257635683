/**
 * @module The shared MessagePack sized-header writer writes what the general
 * encoder writes, at any position of any array, and touches nothing around it.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { BIN_TAGS, STR_TAGS, uintBytes, writeSized, writeUint } from "../../runtime/queue/msgpack-sized.js";

const general = new Packr({ useRecords: false });
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const EDGES = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x1_0000, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff];

describe("MessagePack sized headers", () => {
  it("write each unsigned integer as the general encoder does, at an offset, leaving the bytes around it alone", () => {
    for (const v of EDGES) {
      const out = new Uint8Array(16).fill(0xee);
      const end = writeUint(out, 3, v);
      expect(end - 3).toBe(uintBytes(v));
      expect(hex(out.subarray(3, end)), `value ${v}`).toBe(hex(general.pack(v)));
      expect([...out.subarray(0, 3), ...out.subarray(end)].every((b) => b === 0xee)).toBe(true);
    }
  });

  it("write string and byte-array length headers as the general encoder does", () => {
    for (const n of [0x20, 0xff, 0x100, 0xffff, 0x1_0000]) {
      const s = "a".repeat(n);
      const out = new Uint8Array(8);
      expect(hex(out.subarray(0, writeSized(out, 0, n, STR_TAGS)))).toBe(hex(general.pack(s).subarray(0, n < 0x100 ? 2 : n < 0x1_0000 ? 3 : 5)));
    }
    for (const n of [0, 0xff, 0x100, 0xffff, 0x1_0000]) {
      const out = new Uint8Array(8);
      const end = writeSized(out, 0, n, BIN_TAGS);
      expect(hex(out.subarray(0, end))).toBe(hex(general.pack(new Uint8Array(n)).subarray(0, end)));
    }
  });
});
