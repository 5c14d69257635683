/**
 * @module The string formats that spec schemas may name in `format`, and the
 * helpers precompiled validators call at run time.
 *
 * Precompiled validators reference these instead of ajv's runtime modules so
 * that generated code depends on nothing but this package. The generator
 * registers the very same functions with ajv when it compiles, so a value is
 * judged the same way at generation time and at run time.
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^(\d{2}):(\d{2}):(\d{2})(\.\d+)?(z|[+-]\d{2}:\d{2})$/i;
const DURATION = /^P(?!$)((\d+Y)?(\d+M)?(\d+W)?(\d+D)?)(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Deliberately permissive (one @, a dot in the domain, no spaces): mail
// servers are the real judge, the schema only rejects obvious mistakes.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const HOST_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
const IPV4_PART = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

function isDate(value: string): boolean {
  const m = DATE.exec(value);
  if (m === null) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  return day <= days;
}

function isTime(value: string): boolean {
  const m = TIME.exec(value);
  if (m === null) return false;
  // Second 60 is a leap second, which RFC 3339 allows.
  return Number(m[1]) <= 23 && Number(m[2]) <= 59 && Number(m[3]) <= 60;
}

function isIpv4(value: string): boolean {
  const parts = value.split(".");
  return parts.length === 4 && parts.every((p) => IPV4_PART.test(p));
}

function isIpv6(value: string): boolean {
  if (!/^[0-9a-f:.]+$/i.test(value) || value.length < 2) return false;
  const halves = value.split("::");
  if (halves.length > 2) return false;
  const groups = halves.flatMap((h) => (h === "" ? [] : h.split(":")));
  let count = 0;
  for (const [i, g] of groups.entries()) {
    if (g.includes(".")) {
      // An embedded IPv4 address may only close the address and counts as two groups.
      if (i !== groups.length - 1 || !isIpv4(g)) return false;
      count += 2;
    } else {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return false;
      count += 1;
    }
  }
  return halves.length === 2 ? count < 8 : count === 8;
}

function isHostname(value: string): boolean {
  if (value.length === 0 || value.length > 253) return false;
  const labels = value.endsWith(".") ? value.slice(0, -1).split(".") : value.split(".");
  return labels.every((l) => HOST_LABEL.test(l));
}

function isUri(value: string): boolean {
  if (!SCHEME.test(value) || /\s/.test(value)) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

function isRegex(value: string): boolean {
  try {
    new RegExp(value, "u");
    return true;
  } catch {
    return false;
  }
}

/**
 * Every `format` a spec schema may use, by name. A format not listed here is
 * rejected by the spec's meta-schema, so no validator silently ignores one.
 */
export const jsonSchemaFormats: Readonly<Record<string, (value: string) => boolean>> = Object.freeze({
  date: isDate,
  time: isTime,
  "date-time": (v: string) => {
    const t = v.search(/[tT ]/);
    return t > 0 && isDate(v.slice(0, t)) && isTime(v.slice(t + 1));
  },
  duration: (v: string) => DURATION.test(v),
  email: (v: string) => EMAIL.test(v),
  hostname: isHostname,
  ipv4: isIpv4,
  ipv6: isIpv6,
  uri: isUri,
  uuid: (v: string) => UUID.test(v),
  regex: isRegex,
});

/** Length of a string in code points, which is how JSON Schema counts `minLength`. */
export function codePointLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length) {
      const d = value.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Structural equality of JSON values, as `const`, `enum` and `uniqueItems` need it. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const rb = b as Record<string, unknown>;
  const ra = a as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && jsonEqual(ra[k], rb[k]));
}

/**
 * What precompiled validators link against: the generator rewrites ajv's
 * `require`s of its runtime helpers into references to this object.
 */
export const validatorRuntime = Object.freeze({
  formats: jsonSchemaFormats,
  ucs2length: codePointLength,
  equal: jsonEqual,
});
