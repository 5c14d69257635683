/**
 * @module How operator tools show a payload or result: its size, its text
 * when it is UTF-8 (cut to a bound, so a huge payload never floods a
 * terminal or a page), else the start of its base64.
 */

/** Most characters of a payload shown. */
export const PREVIEW_CHARS = 4096;

export interface BytesPreview {
  readonly size: number;
  /** The bytes as text, when they are valid UTF-8 (cut at `PREVIEW_CHARS`). */
  readonly text?: string;
  /** The first bytes as base64, when they are not text. */
  readonly base64?: string;
  /** Whether the text or base64 was cut. */
  readonly truncated: boolean;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function previewBytes(bytes: Uint8Array): BytesPreview {
  const head = bytes.subarray(0, PREVIEW_CHARS * 4);
  try {
    // A cut may split a character: decode what is whole (the stream option keeps the tail for later).
    const text = new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: head.byteLength < bytes.byteLength });
    if (text.length > PREVIEW_CHARS) return { size: bytes.byteLength, text: text.slice(0, PREVIEW_CHARS), truncated: true };
    return { size: bytes.byteLength, text, truncated: head.byteLength < bytes.byteLength };
  } catch {
    const cut = bytes.subarray(0, (PREVIEW_CHARS / 4) * 3);
    return { size: bytes.byteLength, base64: Buffer.from(cut).toString("base64"), truncated: cut.byteLength < bytes.byteLength };
  }
}

/** Whether `bytes` decode as UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}
