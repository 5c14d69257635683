/**
 * @module Which addresses outbound webhook requests may connect to.
 *
 * Webhook URLs often come from users, so a delivery worker is a server-side
 * request forgery risk: a URL naming `localhost`, a private service or the
 * cloud metadata address (169.254.169.254) would let a user reach inside the
 * network. The check resolves the host once, refuses the whole host when any
 * of its addresses is refused (a name that mixes public and private answers
 * is suspicious), and hands the checked addresses to the connection so a
 * second DNS answer cannot swap in another address (DNS rebinding).
 */

import { lookup as dnsLookup } from "node:dns/promises";
import { type AddressClass, type Network, classifyIp, inNetwork, parseIp, parseNetwork, unmapIp } from "./ip-address.js";
import { isCloudMetadataAddress, namesMetadataAddressExactly } from "./metadata-addresses.js";
import { WebhookAddressRefusedError } from "./webhook-errors.js";
import { ValidationError } from "../errors.js";
import { checkOptionalFunction, describeValue, errorText, isOptionObject, optionFields, readOptionArray, readOptions } from "../option-values.js";

/** One resolved address, as `dns.lookup` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host name to all its addresses. The default uses the system
 * resolver (`dns.lookup` with `all: true`), the same one Node's HTTP client
 * would use, so `/etc/hosts` entries are honoured and checked.
 */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The outbound address policy. By default only public addresses are allowed. */
export interface AddressPolicyOptions {
  /**
   * Allow loopback addresses (127.0.0.0/8, ::1). For tests and local
   * development. Default: false.
   */
  allowLoopback?: boolean;
  /**
   * Allow private networks (10/8, 172.16/12, 192.168/16, 100.64/10,
   * 198.18/15, fc00::/7). For deployments whose receivers live on the same
   * private network. Link-local addresses (169.254/16, fe80::/10, where cloud
   * metadata services answer) stay refused; list them in `allowedNetworks`
   * if they are really wanted. Cloud metadata endpoints (see
   * `CLOUD_METADATA_ADDRESSES`, e.g. fd00:ec2::254 or 100.100.100.200) stay
   * refused whatever the class permissions. Default: false.
   */
  allowPrivate?: boolean;
  /**
   * Addresses or CIDR networks allowed whatever their class, e.g.
   * `["10.1.2.0/24", "fd12::5"]`. IPv4-mapped IPv6 addresses match the IPv4
   * entries. A cloud metadata address is allowed only by an entry naming
   * exactly that address (a /32 or /128), never by a wider network. Default: none.
   */
  allowedNetworks?: readonly string[];
  /** Resolves host names. Default: the system resolver. */
  resolve?: HostResolver;
}

/** The policy with its defaults resolved and its networks parsed, made once per worker. */
export interface CompiledAddressPolicy {
  readonly allowLoopback: boolean;
  readonly allowPrivate: boolean;
  readonly allowedNetworks: readonly Network[];
  readonly resolve: HostResolver;
  /** The option path of `resolve`, for refusing what it answers. */
  readonly resolvePath: string;
}

const systemResolve: HostResolver = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Most `allowedNetworks` entries a policy takes. */
const MAX_ALLOWED_NETWORKS = 10_000;

/**
 * Checks the policy's options, resolves defaults and parses
 * `allowedNetworks`: the one place they are checked. Each field and entry is
 * read once; a value of the wrong kind, an entry whose getter throws or a
 * malformed network is a `ValidationError` naming it as `{path}.{field}`
 * (`WebhookWorkerOptions.allowedNetworks[2]`).
 */
export function compileAddressPolicy(opts: AddressPolicyOptions = {}, path = "AddressPolicyOptions"): CompiledAddressPolicy {
  const o = readOptions(opts, ADDRESS_POLICY_KEYS, path) as AddressPolicyOptions;
  checkOptionalFunction(`${path}.resolve`, o.resolve);
  // Exactly booleans: a string such as "false" (from an environment variable) is truthy and would open the guard.
  for (const k of ["allowLoopback", "allowPrivate"] as const) {
    const v: unknown = o[k];
    if (v !== undefined && typeof v !== "boolean") throw new ValidationError(`${path}.${k} must be true or false, got ${describeValue(v)}`);
  }
  const where = `${path}.allowedNetworks`;
  const entries = o.allowedNetworks === undefined ? [] : readOptionArray(where, o.allowedNetworks, "an array of CIDR strings", MAX_ALLOWED_NETWORKS);
  return {
    allowLoopback: o.allowLoopback ?? false,
    allowPrivate: o.allowPrivate ?? false,
    allowedNetworks: entries.map((e, i) => networkEntry(`${where}[${i}]`, e)),
    resolve: o.resolve ?? systemResolve,
    resolvePath: `${path}.resolve`,
  };
}

const ADDRESS_POLICY_KEYS = optionFields<AddressPolicyOptions>({ allowLoopback: true, allowPrivate: true, allowedNetworks: true, resolve: true });

/** One `allowedNetworks` entry, parsed; refused naming `path` when it is not an address or network text. */
function networkEntry(path: string, e: unknown): Network {
  if (typeof e !== "string") throw new ValidationError(`${path} must be an IP address or CIDR network string, got ${describeValue(e)}`);
  try {
    return parseNetwork(e);
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(`${path}: ${err.message}`);
    throw err;
  }
}

/**
 * Whether the policy lets a connection reach `address`, with the class it
 * was judged by. Pure.
 */
export function checkAddress(policy: CompiledAddressPolicy, address: string): { allowed: boolean; addressClass: AddressClass | "cloud-metadata" | "invalid" } {
  const bytes = parseIp(address);
  if (!bytes) return { allowed: false, addressClass: "invalid" };
  if (isCloudMetadataAddress(bytes)) {
    return { allowed: policy.allowedNetworks.some((n) => namesMetadataAddressExactly(n, bytes)), addressClass: "cloud-metadata" };
  }
  const addressClass = classifyIp(bytes);
  const plain = unmapIp(bytes);
  if (policy.allowedNetworks.some((n) => inNetwork(plain, n) || inNetwork(bytes, n))) return { allowed: true, addressClass };
  switch (addressClass) {
    case "public":
      return { allowed: true, addressClass };
    case "loopback":
      return { allowed: policy.allowLoopback, addressClass };
    case "private":
      return { allowed: policy.allowPrivate, addressClass };
    default:
      return { allowed: false, addressClass };
  }
}

/**
 * Resolves `hostname` (a name or an IP literal, brackets allowed) and returns
 * every address when all are allowed. Throws `WebhookAddressRefusedError`
 * (permanent) when any address is refused; resolver failures propagate as
 * they are (a DNS outage is worth retrying).
 */
export async function resolveAllowedAddresses(policy: CompiledAddressPolicy, hostname: string): Promise<ResolvedAddress[]> {
  const literal = parseIp(hostname);
  const addresses = literal
    ? [{ address: literalText(hostname), family: literal.length === 4 ? 4 : 6 } as const]
    : readResolved(policy, await policy.resolve(hostname));
  if (addresses.length === 0) throw new Error(`host "${hostname}" resolved to no addresses`);
  for (const a of addresses) {
    const verdict = checkAddress(policy, a.address);
    if (!verdict.allowed) throw new WebhookAddressRefusedError(hostname, a.address, verdict.addressClass);
  }
  return addresses;
}

/** Most addresses taken from one answer of a resolver. */
const MAX_RESOLVED = 1024;

/**
 * A resolver's answer, each address read once into a fresh entry (a getter
 * could answer one address to the check and another to the connection),
 * its family the address's own; anything but an array of entries with an
 * address string is a `ValidationError` naming the option.
 */
function readResolved(policy: CompiledAddressPolicy, answer: unknown): ResolvedAddress[] {
  const path = policy.resolvePath;
  const entries = readOptionArray(`the answer of ${path}`, answer, "an array of { address, family }", MAX_RESOLVED);
  return entries.map((entry, i) => {
    let address: unknown;
    try {
      address = isOptionObject(entry) ? (entry as { address?: unknown }).address : undefined;
    } catch (err) {
      throw new ValidationError(`reading the address of entry ${i} of the answer of ${path} threw: ${errorText(err)}`);
    }
    const bytes = typeof address === "string" ? parseIp(address) : undefined;
    if (typeof address !== "string" || !bytes)
      throw new ValidationError(
        `${path} must answer IP address strings, got ${isOptionObject(entry) ? describeValue(address) : describeValue(entry)} at entry ${i}`,
      );
    return { address, family: bytes.length === 4 ? 4 : 6 };
  });
}

function literalText(hostname: string): string {
  return hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
}
