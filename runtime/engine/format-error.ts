/**
 * @module The error for stores written by a newer, unknown format version.
 */
import { TaqubaError } from "../errors.js";

/**
 * An object in the store carries a format version this engine does not know:
 * a newer version of taquba wrote it. Nothing was read from or written to the
 * store; upgrade taquba in this process.
 */
export class UnsupportedFormatError extends TaqubaError {
  constructor(
    readonly objectKey: string,
    readonly version: number,
    readonly supported: number,
  ) {
    super(
      "UNSUPPORTED_FORMAT",
      `object "${objectKey}" has format version ${version}, but this engine reads versions up to ${supported}; ` +
        "a newer taquba wrote this store, so upgrade taquba here before opening it",
    );
  }
}
