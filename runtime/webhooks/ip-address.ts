/**
 * @module IP address parsing and classification for outbound checks.
 *
 * Pure functions over byte arrays: an address is 4 bytes (IPv4) or 16 bytes
 * (IPv6). Classification answers "what kind of network does this reach", so
 * the policy in `address-policy.ts` can refuse loopback, private and other
 * non-public destinations. IPv6 forms that embed an IPv4 address (mapped,
 * NAT64, 6to4) are classified by the embedded address, since that is where
 * the packets end up.
 */

import { isIPv4, isIPv6 } from "node:net";
import { ValidationError } from "../errors.js";
import { quoteValue } from "../option-values.js";

/** What an address reaches. Only `public` is allowed by default. */
export type AddressClass = "public" | "loopback" | "private" | "link-local" | "multicast" | "unspecified" | "reserved";

/** A network in CIDR form, as bytes and a prefix length. */
export interface Network {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** Parses an IPv4 or IPv6 literal (IPv6 may carry a `%zone` and brackets); `null` when it is neither. */
export function parseIp(text: string): Uint8Array | null {
  let s = text.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (isIPv4(s)) return parseIpv4(s);
  if (isIPv6(s)) return parseIpv6(s);
  return null;
}

function parseIpv4(s: string): Uint8Array {
  return Uint8Array.from(s.split(".").map((p) => Number(p)));
}

function parseIpv6(s: string): Uint8Array {
  const out = new Uint8Array(16);
  // A trailing dotted quad fills the last four bytes.
  let tail: Uint8Array | null = null;
  const lastColon = s.lastIndexOf(":");
  if (s.indexOf(".", lastColon) >= 0) {
    tail = parseIpv4(s.slice(lastColon + 1));
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = s.split("::") as [string, string | undefined];
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const all = rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  all.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  if (tail) out.set(tail, 12);
  return out;
}

/** Formats address bytes back to text (IPv6 without zero compression; for messages only). */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return [...bytes].join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(":");
}

/**
 * Parses `"10.0.0.0/8"`, `"fd00::/8"` or a single address (a /32 or /128).
 * Throws a `ValidationError` naming the input when it is not one.
 */
export function parseNetwork(text: string): Network {
  const slash = text.indexOf("/");
  const addr = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!addr) throw new ValidationError(`${quoteValue(text)} is not an IP address or CIDR network`);
  const max = addr.length * 8;
  const prefix = slash < 0 ? max : Number(text.slice(slash + 1));
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (slash >= 0 && !/^\d+$/.test(text.slice(slash + 1)))) {
    throw new ValidationError(`${quoteValue(text)} has a bad prefix length; expected 0 to ${max}`);
  }
  return { bytes: addr, prefix };
}

/** Whether `addr` lies in `net` (same family only). */
export function inNetwork(addr: Uint8Array, net: Network): boolean {
  if (addr.length !== net.bytes.length) return false;
  const full = net.prefix >> 3;
  for (let i = 0; i < full; i++) if (addr[i] !== net.bytes[i]) return false;
  const bits = net.prefix & 7;
  if (bits === 0) return true;
  const mask = (0xff << (8 - bits)) & 0xff;
  return (addr[full]! & mask) === (net.bytes[full]! & mask);
}

/**
 * The IPv4 address an IPv6 one stands for, when it is IPv4-mapped
 * (`::ffff:a.b.c.d`); otherwise the address unchanged. Allow-lists and
 * classification both see mapped addresses as the IPv4 they are.
 */
export function unmapIp(addr: Uint8Array): Uint8Array {
  if (addr.length === 16 && inNetwork(addr, MAPPED)) return addr.slice(12);
  return addr;
}

const net = (cidr: string): Network => parseNetwork(cidr);

const MAPPED = net("::ffff:0:0/96");

// Prefixes that carry an IPv4 address the packets are eventually sent to:
// NAT64 (RFC 6052) in the last 32 bits, 6to4 (RFC 3056) in bits 16-47.
const NAT64 = net("64:ff9b::/96");
const SIX_TO_FOUR = net("2002::/16");

// First match wins, so narrower ranges come before the ranges holding them.
const IPV4_TABLE: ReadonlyArray<readonly [Network, AddressClass]> = [
  [net("0.0.0.0/8"), "unspecified"], // "this network"; 0.0.0.0 reaches the local host on Linux
  [net("127.0.0.0/8"), "loopback"],
  [net("10.0.0.0/8"), "private"],
  [net("172.16.0.0/12"), "private"],
  [net("192.168.0.0/16"), "private"],
  [net("100.64.0.0/10"), "private"], // carrier-grade NAT shared space
  [net("198.18.0.0/15"), "private"], // benchmarking, used inside labs and clouds
  [net("169.254.0.0/16"), "link-local"], // includes cloud metadata services
  [net("192.0.0.0/24"), "reserved"],
  [net("192.0.2.0/24"), "reserved"],
  [net("198.51.100.0/24"), "reserved"],
  [net("203.0.113.0/24"), "reserved"],
  [net("192.88.99.0/24"), "reserved"],
  [net("224.0.0.0/4"), "multicast"],
  [net("240.0.0.0/4"), "reserved"], // includes the broadcast address
];

const IPV6_TABLE: ReadonlyArray<readonly [Network, AddressClass]> = [
  [net("::/128"), "unspecified"],
  [net("::1/128"), "loopback"],
  [net("64:ff9b:1::/48"), "private"], // local-use NAT64
  [net("fc00::/7"), "private"], // unique local
  [net("fec0::/10"), "private"], // deprecated site-local
  [net("fe80::/10"), "link-local"],
  [net("ff00::/8"), "multicast"],
  [net("100::/64"), "reserved"], // discard
  [net("2001:db8::/32"), "reserved"], // documentation
  [net("2001::/23"), "reserved"], // IETF protocol assignments, Teredo
  [net("::/96"), "reserved"], // deprecated IPv4-compatible
];

// Global unicast; any other IPv6 space is unallocated or special-purpose.
const GLOBAL_UNICAST = net("2000::/3");

/** Classifies an address (4 or 16 bytes). */
export function classifyIp(input: Uint8Array): AddressClass {
  const addr = unmapIp(input);
  if (addr.length === 4) {
    for (const [n, c] of IPV4_TABLE) if (inNetwork(addr, n)) return c;
    return "public";
  }
  if (inNetwork(addr, NAT64)) return classifyIp(addr.slice(12));
  if (inNetwork(addr, SIX_TO_FOUR)) return classifyIp(addr.slice(2, 6));
  for (const [n, c] of IPV6_TABLE) if (inNetwork(addr, n)) return c;
  return inNetwork(addr, GLOBAL_UNICAST) ? "public" : "reserved";
}
