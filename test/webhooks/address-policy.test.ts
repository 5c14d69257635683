/**
 * @module IP address classification and the outbound address policy (loopback,
 * private, allowed networks, embedded IPv4).
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "taquba";
import { WebhookAddressRefusedError, type HostResolver } from "taquba";
import { checkAddress, compileAddressPolicy, resolveAllowedAddresses } from "../../runtime/webhooks/address-policy.js";
import { classifyIp, parseIp, parseNetwork, type AddressClass } from "../../runtime/webhooks/ip-address.js";

const cls = (ip: string): AddressClass => classifyIp(parseIp(ip)!);

describe("IP classification", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["100.127.255.255", "private"],
    ["100.128.0.1", "public"],
    ["198.18.0.1", "private"],
    ["169.254.169.254", "link-local"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "reserved"],
    ["192.0.2.5", "reserved"],
    ["203.0.113.9", "reserved"],
  ] as const)("IPv4 %s is %s", (ip, expected) => {
    expect(cls(ip)).toBe(expected);
  });

  it.each([
    ["2606:4700:4700::1111", "public"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["100::1", "reserved"],
    ["4000::1", "reserved"],
    ["[::1]", "loopback"],
    // IPv4 embedded in IPv6 is judged by the IPv4 address.
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:10.1.2.3", "private"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:8.8.8.8", "public"],
    ["64:ff9b::7f00:1", "loopback"],
    ["64:ff9b::808:808", "public"],
    ["2002:7f00:1::1", "loopback"],
    ["2002:0808:0808::1", "public"],
    ["::127.0.0.1", "reserved"],
  ] as const)("IPv6 %s is %s", (ip, expected) => {
    expect(cls(ip)).toBe(expected);
  });

  it("parses networks and refuses bad ones", () => {
    expect(parseNetwork("10.0.0.0/8").prefix).toBe(8);
    expect(parseNetwork("fd00::5").prefix).toBe(128);
    expect(() => parseNetwork("10.0.0.0/33")).toThrow(ValidationError);
    expect(() => parseNetwork("10.0.0.0/x")).toThrow(ValidationError);
    expect(() => parseNetwork("example.com")).toThrow(/not an IP/);
    expect(parseIp("example.com")).toBeNull();
    expect(parseIp("1.2.3")).toBeNull();
  });
});

describe("address policy", () => {
  it("allows only public addresses by default", () => {
    const p = compileAddressPolicy();
    expect(checkAddress(p, "8.8.8.8").allowed).toBe(true);
    for (const ip of ["127.0.0.1", "::1", "10.0.0.1", "169.254.169.254", "0.0.0.0", "::ffff:127.0.0.1", "ff02::1", "junk"]) {
      expect(checkAddress(p, ip).allowed, ip).toBe(false);
    }
  });

  it("allowLoopback and allowPrivate open only their classes", () => {
    const loop = compileAddressPolicy({ allowLoopback: true });
    expect(checkAddress(loop, "127.0.0.1").allowed).toBe(true);
    expect(checkAddress(loop, "::ffff:127.0.0.1").allowed).toBe(true);
    expect(checkAddress(loop, "10.0.0.1").allowed).toBe(false);
    const priv = compileAddressPolicy({ allowPrivate: true });
    expect(checkAddress(priv, "10.0.0.1").allowed).toBe(true);
    expect(checkAddress(priv, "fd00::1").allowed).toBe(true);
    expect(checkAddress(priv, "127.0.0.1").allowed).toBe(false);
    // The metadata service stays out of reach with allowPrivate.
    expect(checkAddress(priv, "169.254.169.254").allowed).toBe(false);
  });

  it("allowedNetworks admits exactly the listed networks, mapped forms included", () => {
    const p = compileAddressPolicy({ allowedNetworks: ["10.1.2.0/24", "169.254.169.254", "fd12::/16"] });
    expect(checkAddress(p, "10.1.2.77").allowed).toBe(true);
    expect(checkAddress(p, "::ffff:10.1.2.77").allowed).toBe(true);
    expect(checkAddress(p, "10.1.3.1").allowed).toBe(false);
    expect(checkAddress(p, "169.254.169.254").allowed).toBe(true);
    expect(checkAddress(p, "fd12::9").allowed).toBe(true);
    expect(checkAddress(p, "fd13::9").allowed).toBe(false);
    expect(() => compileAddressPolicy({ allowedNetworks: ["10.0.0.0/40"] })).toThrow(ValidationError);
  });

  it("checks its own options, naming each by the path it is given (the worker's and any other caller's alike)", () => {
    const refusal = (opts: unknown, path?: string): string => {
      try {
        compileAddressPolicy(opts as never, path);
      } catch (e) {
        expect(e).toBeInstanceOf(ValidationError);
        return (e as Error).message;
      }
      return "accepted";
    };
    // The string "false" is truthy: taken as given it would open the guard.
    expect(refusal({ allowLoopback: "false" })).toBe('AddressPolicyOptions.allowLoopback must be true or false, got "false" (a string)');
    expect(refusal({ allowPrivate: 1 }, "W")).toBe("W.allowPrivate must be true or false, got 1");
    expect(refusal({ resolve: "dns" }, "W")).toBe('W.resolve must be a function, got "dns" (a string)');
    expect(refusal({ allowedNetworks: "10.0.0.0/8" }, "W")).toBe('W.allowedNetworks must be an array of CIDR strings, got "10.0.0.0/8" (a string)');
    expect(refusal({ allowedNetworks: ["10.0.0.0/8", 10] }, "W")).toBe("W.allowedNetworks[1] must be an IP address or CIDR network string, got 10");
    expect(refusal({ allowedNetworks: ["10.0.0.0/8", "10.0.0.0/40"] }, "W")).toMatch(/^W\.allowedNetworks\[1\]: "10\.0\.0\.0\/40" has a bad prefix length/);
    // A 10 MB entry is shown cut.
    const long = refusal({ allowedNetworks: ["x".repeat(10 * 1024 * 1024)] }, "W");
    expect(long.length).toBeLessThan(200);
  });

  it("reads allowedNetworks defensively: a throwing entry, a revoked Proxy, a lying length", () => {
    const refusal = (allowedNetworks: unknown): unknown => {
      try {
        compileAddressPolicy({ allowedNetworks } as never, "W");
      } catch (e) {
        return e;
      }
      return "accepted";
    };
    const throwing = Object.defineProperty(["10.0.0.0/8", "x"], 1, {
      get() {
        throw new Error("no entry");
      },
    });
    const revoked = Proxy.revocable([], {});
    revoked.revoke();
    const endless = new Proxy(["10.0.0.0/8"], { get: (t, k) => (k === "length" ? 2 ** 32 - 1 : Reflect.get(t, k)) });
    const unreadableLength = new Proxy([], {
      get(t, k) {
        if (k === "length") throw Symbol("no length");
        return Reflect.get(t, k);
      },
    });
    const entryProxy = Proxy.revocable({}, {});
    entryProxy.revoke();
    const cases: [unknown, string][] = [
      [throwing, "reading W.allowedNetworks[1] threw: no entry"],
      [revoked.proxy, "W.allowedNetworks must be an array of CIDR strings, got a revoked Proxy"],
      [endless, "W.allowedNetworks must be an array of CIDR strings of at most 10000 entries, got 4294967295 entries"],
      [unreadableLength, "reading W.allowedNetworks.length threw"],
      [[entryProxy.proxy], "W.allowedNetworks[0] must be an IP address or CIDR network string, got a revoked Proxy"],
      [[10n], "W.allowedNetworks[0] must be an IP address or CIDR network string, got 10n (a bigint)"],
    ];
    for (const [given, message] of cases) {
      const err = refusal(given);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain(message);
    }
  });

  it("refuses a host when any of its addresses is refused", async () => {
    const resolve: HostResolver = async (h) =>
      h === "mixed.test"
        ? [
            { address: "8.8.8.8", family: 4 },
            { address: "10.0.0.5", family: 4 },
          ]
        : [{ address: "2606:4700:4700::1111", family: 6 }];
    const p = compileAddressPolicy({ resolve });
    await expect(resolveAllowedAddresses(p, "public.test")).resolves.toEqual([{ address: "2606:4700:4700::1111", family: 6 }]);
    const err = await resolveAllowedAddresses(p, "mixed.test").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookAddressRefusedError);
    expect((err as WebhookAddressRefusedError).address).toBe("10.0.0.5");
    expect((err as WebhookAddressRefusedError).addressClass).toBe("private");
    expect((err as Error).message).toMatch(/allowPrivate/);
  });

  it("checks and returns the resolver's answer as read once: an address getter that answers a public address first and loopback after cannot pass the check and connect elsewhere", async () => {
    let reads = 0;
    const shifty = {
      get address() {
        return reads++ === 0 ? "8.8.8.8" : "127.0.0.1";
      },
      family: 4 as const,
    };
    const p = compileAddressPolicy({ resolve: async () => [shifty] });
    const got = await resolveAllowedAddresses(p, "shifty.test");
    expect(got).toEqual([{ address: "8.8.8.8", family: 4 }]);
    expect(got[0]!.address).toBe("8.8.8.8");
    expect(reads).toBe(1);
    // The family is the address's own, whatever the resolver said.
    const lying = compileAddressPolicy({ resolve: async () => [{ address: "2606:4700:4700::1111", family: 4 }] });
    await expect(resolveAllowedAddresses(lying, "lying.test")).resolves.toEqual([{ address: "2606:4700:4700::1111", family: 6 }]);
  });

  it("refuses a resolver's answer that is not an array of addresses, naming the option", async () => {
    const answers: unknown[] = [
      undefined,
      "8.8.8.8",
      [null],
      [{ address: 134744072, family: 4 }],
      [{ family: 4 }],
      // (Not a throw on every property: the promise's resolution reads `then`, and that failure is the resolver's own.)
      new Proxy([], {
        get(target, key) {
          if (key === "length") throw new Error("length trap");
          return Reflect.get(target, key);
        },
      }),
      [
        Object.defineProperty({}, "address", {
          get() {
            throw new Error("address getter threw");
          },
        }),
      ],
    ];
    for (const [i, answer] of answers.entries()) {
      const p = compileAddressPolicy({ resolve: async () => answer as never });
      const err = await resolveAllowedAddresses(p, "broken.test").catch((e: unknown) => e);
      expect(err, `answer ${i}`).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain("AddressPolicyOptions.resolve");
    }
  });

  it("checks IP literals without resolving them", async () => {
    const resolve: HostResolver = async () => {
      throw new Error("must not resolve a literal");
    };
    const p = compileAddressPolicy({ resolve, allowLoopback: true });
    await expect(resolveAllowedAddresses(p, "127.0.0.1")).resolves.toEqual([{ address: "127.0.0.1", family: 4 }]);
    await expect(resolveAllowedAddresses(p, "[::1]")).resolves.toEqual([{ address: "::1", family: 6 }]);
    await expect(resolveAllowedAddresses(compileAddressPolicy({ resolve }), "[::ffff:7f00:1]")).rejects.toBeInstanceOf(WebhookAddressRefusedError);
  });

  it("checks what the system resolver returns for localhost", async () => {
    await expect(resolveAllowedAddresses(compileAddressPolicy(), "localhost")).rejects.toBeInstanceOf(WebhookAddressRefusedError);
    const ok = await resolveAllowedAddresses(compileAddressPolicy({ allowLoopback: true }), "localhost");
    expect(ok.length).toBeGreaterThan(0);
  });

  it("passes resolver failures through for a retry", async () => {
    const p = compileAddressPolicy({ resolve: async () => Promise.reject(Object.assign(new Error("EAI_AGAIN"), { code: "EAI_AGAIN" })) });
    const err = await resolveAllowedAddresses(p, "flaky.test").catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(WebhookAddressRefusedError);
    expect((err as { code?: string }).code).toBe("EAI_AGAIN");
  });
});
