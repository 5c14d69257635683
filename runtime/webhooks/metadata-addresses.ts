/**
 * @module Cloud metadata endpoints: the one list outbound webhooks never reach.
 *
 * A metadata service hands out the host's cloud credentials to whoever asks
 * from inside, so a webhook URL pointing at one turns a delivery worker into
 * a credential leak. Some of these addresses sit in ranges an operator may
 * allow (private, link-local, even public space), so they are refused before
 * any class-based permission: only an `allowedNetworks` entry naming exactly
 * one of these addresses lets a delivery reach it.
 */

import { bytesEqual } from "../store/bytes-equal.js";
import { ValidationError } from "../errors.js";
import { describeValue, isOptionBytes } from "../option-values.js";
import { inNetwork, parseIp, unmapIp, type Network } from "./ip-address.js";

/** Every refused metadata address, with the service that answers there. */
export const CLOUD_METADATA_ADDRESSES: ReadonlyArray<readonly [address: string, service: string]> = [
  ["169.254.169.254", "AWS, Azure, Google Cloud, Oracle, DigitalOcean, OpenStack instance metadata"],
  ["169.254.170.2", "AWS ECS task metadata and credentials"],
  ["169.254.170.23", "AWS EKS pod identity agent"],
  ["169.254.169.123", "AWS time sync"],
  ["169.254.0.23", "Tencent Cloud metadata"],
  ["100.100.100.200", "Alibaba Cloud metadata"],
  ["168.63.129.16", "Azure wire server"],
  ["192.0.0.192", "Oracle Cloud legacy metadata"],
  ["fd00:ec2::254", "AWS instance metadata over IPv6"],
  ["fd00:ec2::23", "AWS EKS pod identity agent over IPv6"],
  ["fd00:ec2::123", "AWS time sync over IPv6"],
];

const PARSED: readonly Uint8Array[] = CLOUD_METADATA_ADDRESSES.map(([a]) => {
  const bytes = parseIp(a);
  if (bytes === null) throw new Error(`metadata address ${a} does not parse`);
  return bytes;
});

/**
 * Whether `addr` (4 or 16 bytes, IPv4-mapped or embedded forms included) is
 * a cloud metadata endpoint.
 */
export function isCloudMetadataAddress(addr: Uint8Array): boolean {
  // A string ("169.254.169.254") would answer false: a wrong answer, not a refusal.
  if (!isOptionBytes(addr)) throw new ValidationError(`isCloudMetadataAddress takes an address as 4 or 16 bytes (a Uint8Array), got ${describeValue(addr)}`);
  const candidates = [addr, unmapIp(addr)];
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address the packets end up at.
  if (addr.length === 16 && addr[0] === 0x00 && addr[1] === 0x64 && addr[2] === 0xff && addr[3] === 0x9b && addr.subarray(4, 12).every((b) => b === 0)) {
    candidates.push(addr.slice(12));
  }
  if (addr.length === 16 && addr[0] === 0x20 && addr[1] === 0x02) candidates.push(addr.slice(2, 6));
  return candidates.some((c) => PARSED.some((m) => bytesEqual(c, m)));
}

/** Whether `net` names exactly one metadata address (the only way to allow one). */
export function namesMetadataAddressExactly(net: Network, addr: Uint8Array): boolean {
  return net.prefix === net.bytes.length * 8 && (inNetwork(addr, net) || inNetwork(unmapIp(addr), net));
}
