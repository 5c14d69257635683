/**
 * @module Who may talk to the dashboard. It binds to loopback unless told
 * otherwise; binding anywhere else needs a token, and once a token is set
 * every request must carry it: `Authorization: Bearer`, or `?token=` on the
 * first page load, which answers with the token in a same-site, script-less
 * cookie so that the page's own files and its event stream (which cannot
 * set headers) carry it too.
 * Requests must also name this server in `Host` (a page on another site
 * cannot reach it through a rebound DNS name) and writes must come from
 * this origin with a JSON body (no cross-site form posts).
 */
import { timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import type { IncomingMessage } from "node:http";

/** Whether `host` (a name or address to bind) is a loopback interface. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^::ffff:127\./i.test(h);
  return false;
}

/** Shortest token accepted: long enough that guessing is hopeless. */
export const MIN_TOKEN_LENGTH = 16;

/** Checks the binding: a non-loopback host needs a token, and a token needs some length. Returns the problem, or undefined. */
export function bindingProblem(host: string, token: string | undefined): string | undefined {
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH) return `--token must be at least ${MIN_TOKEN_LENGTH} characters`;
  if (token === undefined && !isLoopback(host)) {
    return `binding to ${host} exposes the dashboard beyond this machine: give --token (at least ${MIN_TOKEN_LENGTH} characters), which every request must then carry`;
  }
  return undefined;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.byteLength === y.byteLength && timingSafeEqual(x, y);
}

/** The cookie that carries the token once the page was opened with it. */
export const TOKEN_COOKIE = "taquba_dashboard_token";

/** The `Set-Cookie` value that hands the token to the page's later requests. */
export function tokenCookie(token: string): string {
  return `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`;
}

function cookieToken(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === TOKEN_COOKIE) {
      try {
        return decodeURIComponent(rest.join("="));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The token a request carries: its Authorization header, its `token` query parameter, or the cookie. */
export function requestToken(req: IncomingMessage, url: URL): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === "string" && auth.startsWith("Bearer ")) return auth.slice(7);
  return url.searchParams.get("token") ?? cookieToken(req);
}

/** Whether the request carries the token (always true without one). */
export function authorized(req: IncomingMessage, url: URL, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = requestToken(req, url);
  return given !== undefined && sameSecret(given, token);
}

/** Whether `Host` names this server: the bound address or, on loopback, localhost, at the bound port. */
export function hostAllowed(req: IncomingMessage, boundHost: string, port: number): boolean {
  const host = req.headers.host;
  if (host === undefined) return false;
  const allowed = new Set([`${boundHost}:${port}`, `[${boundHost.replace(/^\[|\]$/g, "")}]:${port}`]);
  if (isLoopback(boundHost)) for (const h of ["localhost", "127.0.0.1", "[::1]"]) allowed.add(`${h}:${port}`);
  // Bound to every interface: any address of this machine may be named, the token guards it.
  if (boundHost === "0.0.0.0" || boundHost === "::") return true;
  return allowed.has(host.toLowerCase());
}

/** Whether a write comes from this dashboard's own page: same origin (when the browser says), JSON body. */
export function writeAllowed(req: IncomingMessage, boundOrigin: (host: string) => string): boolean {
  const type = req.headers["content-type"] ?? "";
  if (!type.toLowerCase().startsWith("application/json")) return false;
  const origin = req.headers.origin;
  return origin === undefined || origin === boundOrigin(req.headers.host ?? "");
}
