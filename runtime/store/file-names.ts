/**
 * @module Key segments as file names that stay distinct on every file system.
 *
 * Keys are case-sensitive and may hold any character, but the default file
 * systems of macOS and Windows fold case (`Order-1` and `order-1` would be
 * one file, sharing its memo entries), macOS also folds Unicode
 * normalisation, and Windows reserves `< > : " | ? *`, control characters,
 * trailing dots and spaces, and device names such as `con` or `lpt1`. So a
 * segment is written with only lower-case ASCII letters, digits, `-`, `_`
 * and `.` as themselves; every other UTF-8 byte (upper case, `%`, spaces,
 * non-ASCII) becomes `%XX` with upper-case hex digits, as does a trailing
 * dot and the first letter of a device name.
 *
 * Distinct segments then give names that differ even after case folding:
 * a name holds literal letters only in lower case and hex digits only in
 * upper case after `%`, so folding it loses nothing.
 */

const LITERAL = /^[a-z0-9_.-]$/;
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)/;
const encoder = new TextEncoder();
// ignoreBOM: a segment may start with U+FEFF, which the decoder would otherwise drop, and the name would
// then fail the canonical check below: its object stored and readable, but never listed.
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function hex(byte: number): string {
  return `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
}

/** The file name of one key segment (never empty for a non-empty segment). */
export function encodeSegment(segment: string): string {
  // Most segments (WAL sequence numbers, lower-case ids) escape nothing: every put spells its key's last one.
  if (isAllLiteral(segment) && !segment.endsWith(".") && !DEVICE_NAME.test(segment)) return segment;
  let out = "";
  const bytes = encoder.encode(segment);
  bytes.forEach((b, i) => {
    const c = String.fromCharCode(b);
    const escaped = b >= 0x80 || !LITERAL.test(c) || (c === "." && i === bytes.length - 1) || (i === 0 && DEVICE_NAME.test(segment));
    out += escaped ? hex(b) : c;
  });
  return out;
}

/** Whether every character of `name` is one a segment keeps as itself (checked without a regular expression: listings call this per file). */
function isAllLiteral(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    const literal = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x5f || c === 0x2e;
    if (!literal) return false;
  }
  return true;
}

/** The segment a file name stands for, or null for names no segment produces (temporary files, strays). */
export function decodeSegment(name: string): string | null {
  // Most names (WAL sequence numbers, hashes, lower-case ids) escape nothing: they are their own segment
  // unless the encoder would have escaped a trailing dot or a device name's first letter.
  if (name.length > 0 && isAllLiteral(name)) return name.endsWith(".") || DEVICE_NAME.test(name) ? null : name;
  const bytes: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (c === "%") {
      const pair = name.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(pair)) return null;
      bytes.push(parseInt(pair, 16));
      i += 2;
    } else if (LITERAL.test(c)) bytes.push(c.charCodeAt(0));
    else return null;
  }
  let segment: string;
  try {
    segment = decoder.decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
  // Only the canonical spelling counts, so one segment never has two files.
  return encodeSegment(segment) === name ? segment : null;
}
