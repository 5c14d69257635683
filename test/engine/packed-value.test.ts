/**
 * A value the writer holds packed (`packValue`) reads back as the bytes
 * committed (`heldValue`), at every size a string holds and from views at
 * any offset of a larger buffer, for every byte value: the string is
 * made from the view itself, never from the buffer around it.
 */
import { describe, expect, it } from "vitest";
import { heldValue, MAX_PACKED_BYTES, packValue } from "../../runtime/engine/paged-value.js";
import { testRandom } from "../support/seed.js";

describe("packed values", () => {
  it("hold exactly the bytes of the view they were packed from, at every size up to the packing bound", () => {
    const rnd = testRandom("packed values round trip");
    const around = new Uint8Array(MAX_PACKED_BYTES + 64);
    for (let i = 0; i < around.length; i++) around[i] = rnd.int(256);
    const sizes = [0, 1, 2, 23, 24, 63, 64, 65, 255, 256, 1023, MAX_PACKED_BYTES];
    for (let k = 0; k < 40; k++) sizes.push(rnd.int(MAX_PACKED_BYTES + 1));
    for (const size of sizes) {
      const offset = rnd.int(around.length - size + 1);
      const view = around.subarray(offset, offset + size);
      // A key whose tail differs from the value, so the value is packed as a string.
      const packed = packValue("j/\u00ff", view);
      expect(typeof packed === "string" || size === 0 || size > MAX_PACKED_BYTES).toBe(true);
      if (typeof packed === "string") expect(packed.length).toBe(size);
      const back = heldValue("j/\u00ff", packed as string);
      expect(Buffer.compare(Buffer.from(back), Buffer.from(view)), `size ${size} at ${offset}`).toBe(0);
    }
  });

  it("keep every byte value, the ones above 0x7f included", () => {
    const all = new Uint8Array(512);
    for (let i = 0; i < all.length; i++) all[i] = i & 0xff;
    for (const size of [16, 256, 512]) {
      const view = all.subarray(all.length - size);
      const packed = packValue("k", view) as string;
      for (let i = 0; i < size; i++) expect(packed.charCodeAt(i)).toBe(view[i]);
      expect(Array.from(heldValue("k", packed))).toEqual(Array.from(view));
    }
  });

  it("are copies: changing the committed array afterwards changes nothing held", () => {
    const value = new Uint8Array(100).fill(7);
    const packed = packValue("k", value);
    value.fill(9);
    expect(Array.from(heldValue("k", packed as string))).toEqual(new Array(100).fill(7));
  });
});
