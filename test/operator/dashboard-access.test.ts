/**
 * @module Who may reach the dashboard: which bindings need a token, which
 * Host headers are this server, and how a token is carried.
 */
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { authorized, bindingProblem, hostAllowed, isLoopback, requestToken, tokenCookie, writeAllowed } from "../../operator/dashboard/access.js";

function req(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

describe("dashboard access", () => {
  it("tells loopback addresses from the rest", () => {
    for (const h of ["127.0.0.1", "127.8.9.10", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"]) expect(isLoopback(h), h).toBe(true);
    for (const h of ["0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.com", "localhost.example.com", "128.0.0.1", "::2"])
      expect(isLoopback(h), h).toBe(false);
  });

  it("needs a token of at least 16 characters off loopback, and accepts none shorter anywhere", () => {
    expect(bindingProblem("127.0.0.1", undefined)).toBeUndefined();
    expect(bindingProblem("0.0.0.0", undefined)).toContain("give --token");
    expect(bindingProblem("0.0.0.0", "x".repeat(16))).toBeUndefined();
    expect(bindingProblem("127.0.0.1", "short")).toContain("at least 16");
  });

  it("reads the token from the Authorization header, the query or the cookie, and compares it whole", () => {
    const url = new URL("http://h/api/runs");
    const token = "t".repeat(20);
    expect(authorized(req({}), url, undefined)).toBe(true);
    expect(authorized(req({}), url, token)).toBe(false);
    expect(authorized(req({ authorization: `Bearer ${token}` }), url, token)).toBe(true);
    expect(authorized(req({ authorization: `Bearer ${token}x` }), url, token)).toBe(false);
    expect(authorized(req({ authorization: `Bearer ${token.slice(1)}` }), url, token)).toBe(false);
    expect(authorized(req({}), new URL(`http://h/?token=${token}`), token)).toBe(true);
    const cookie = tokenCookie(token).split(";")[0]!;
    expect(authorized(req({ cookie: `other=1; ${cookie}` }), url, token)).toBe(true);
    expect(requestToken(req({ cookie: "taquba_dashboard_token=%E0%A4%A" }), url)).toBeUndefined();
  });

  it("answers only to Host names of this server", () => {
    expect(hostAllowed(req({ host: "127.0.0.1:4400" }), "127.0.0.1", 4400)).toBe(true);
    expect(hostAllowed(req({ host: "localhost:4400" }), "127.0.0.1", 4400)).toBe(true);
    expect(hostAllowed(req({ host: "evil.example:4400" }), "127.0.0.1", 4400)).toBe(false);
    expect(hostAllowed(req({ host: "127.0.0.1:4401" }), "127.0.0.1", 4400)).toBe(false);
    expect(hostAllowed(req({}), "127.0.0.1", 4400)).toBe(false);
    expect(hostAllowed(req({ host: "10.1.2.3:4400" }), "10.1.2.3", 4400)).toBe(true);
    expect(hostAllowed(req({ host: "localhost:4400" }), "10.1.2.3", 4400)).toBe(false);
  });

  it("takes actions only as same-origin JSON", () => {
    const origin = (h: string) => `http://${h}`;
    expect(writeAllowed(req({ "content-type": "application/json", host: "127.0.0.1:4400" }), origin)).toBe(true);
    expect(writeAllowed(req({ "content-type": "application/json", host: "127.0.0.1:4400", origin: "http://127.0.0.1:4400" }), origin)).toBe(true);
    expect(writeAllowed(req({ "content-type": "application/json", host: "127.0.0.1:4400", origin: "http://evil.example" }), origin)).toBe(false);
    expect(writeAllowed(req({ "content-type": "text/plain", host: "127.0.0.1:4400" }), origin)).toBe(false);
    expect(writeAllowed(req({ host: "127.0.0.1:4400" }), origin)).toBe(false);
  });
});
