/**
 * @module Cloud metadata endpoints stay refused under every class permission,
 * in every embedded form, and open only to an exact allowedNetworks entry.
 */
import { describe, expect, it } from "vitest";
import { CLOUD_METADATA_ADDRESSES, WebhookAddressRefusedError } from "taquba";
import { checkAddress, compileAddressPolicy, resolveAllowedAddresses } from "../../runtime/webhooks/address-policy.js";

const wideOpen = compileAddressPolicy({ allowPrivate: true, allowLoopback: true, allowedNetworks: ["0.0.0.0/0", "::/0", "100.64.0.0/10", "fd00::/8"] });

describe("cloud metadata addresses", () => {
  it.each(CLOUD_METADATA_ADDRESSES.map(([a, s]) => [a, s]))("%s (%s) is refused even with allowPrivate and wide allowedNetworks", async (address) => {
    expect(checkAddress(compileAddressPolicy(), address)).toEqual({ allowed: false, addressClass: "cloud-metadata" });
    expect(checkAddress(compileAddressPolicy({ allowPrivate: true }), address).allowed).toBe(false);
    expect(checkAddress(wideOpen, address).allowed).toBe(false);
    const err = await resolveAllowedAddresses(wideOpen, address.includes(":") ? `[${address}]` : address).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookAddressRefusedError);
    // Only an entry naming exactly this address opens it.
    expect(checkAddress(compileAddressPolicy({ allowedNetworks: [address] }), address).allowed).toBe(true);
  });

  it("is recognised through IPv4-mapped, NAT64 and 6to4 forms", () => {
    for (const form of ["::ffff:100.100.100.200", "64:ff9b::6464:64c8", "2002:6464:64c8::1", "::ffff:169.254.169.254"]) {
      expect(checkAddress(wideOpen, form), form).toEqual({ allowed: false, addressClass: "cloud-metadata" });
    }
  });

  it("leaves neighbouring addresses to their class", () => {
    const priv = compileAddressPolicy({ allowPrivate: true });
    expect(checkAddress(priv, "100.100.100.201").allowed).toBe(true);
    expect(checkAddress(priv, "fd00:ec2::253").allowed).toBe(true);
  });
});
