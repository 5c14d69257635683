/**
 * @module MessagePack decoders whose list of record layouts owns every
 * index a layout is looked up at. msgpackr decodes each integer n from 64
 * to 127 by reading its list of layouts at n - 64, and takes an object found
 * there for a layout (the integer then decodes as a record). The list it
 * makes for each decode is empty, so that read went on to `Array.prototype`
 * and `Object.prototype`: an index 0-63 defined there, even by hand and not
 * enumerable (which no cheap look before a decode finds), turned those
 * integers into objects. Here the list is 64 own empty slots, so each read
 * ends at the list whatever the prototypes hold, and it costs nothing: the
 * decoder no longer makes a list per decode. The list is frozen, so a
 * record definition in the bytes (these decoders' encoders never write one,
 * and their callers refuse one before decoding) fails the decode instead of
 * leaving a layout behind for the next one.
 */
import { Packr, Unpackr, type Options } from "msgpackr";

/** Layout ids a one-byte record reference names (0x40-0x7f less 0x40). */
const LAYOUT_IDS = 64;

/** An `Unpackr` with `options` whose record layouts are `LAYOUT_IDS` own empty slots, frozen. */
export function unpackrWithOwnLayouts(options: Options): Unpackr {
  // Array.from defines each slot, so no setter of an index on a prototype can take it.
  const layouts: unknown[] = Array.from({ length: LAYOUT_IDS }, () => undefined);
  // Read by msgpackr after each decode: owned, so no field of that name on a prototype is taken for one.
  Object.defineProperty(layouts, "restoreStructures", { value: null, writable: true, enumerable: false, configurable: true });
  // The constructor sets the list's `sharedLength` (all of it), which keeps each decode from cutting it short.
  const unpackr = new Unpackr({ ...options, structures: layouts as NonNullable<Options["structures"]> });
  Object.freeze(layouts);
  return unpackr;
}

/** A `Packr` with `options` whose decodes go through `unpackrWithOwnLayouts(options)`; its encodes are its own. */
export function packrWithOwnLayouts(options: Options): Packr {
  // Copies: msgpackr's constructors fill in options they are given.
  const packr = new Packr({ ...options });
  const unpackr = unpackrWithOwnLayouts({ ...options });
  packr.unpack = (source, opts) => unpackr.unpack(source, opts);
  packr.decode = packr.unpack;
  return packr;
}
