/**
 * @module One HTTP request/response exchange to pre-checked addresses.
 *
 * The connection goes only to the addresses the outbound policy already
 * checked: the request gets a `lookup` function that answers with them
 * instead of asking DNS again, so a second, different DNS answer (DNS
 * rebinding) cannot redirect it. The `Host` header and TLS server name
 * still come from the URL, so virtual hosts and certificates work as usual.
 *
 * Uses node:http and node:https with no connection pooling: each attempt
 * opens its own connection, which keeps the pinning exact (a pooled socket
 * could have been opened under another policy) at the cost of a handshake
 * per delivery.
 */

import type { LookupAddress, LookupOptions } from "node:dns";
import { type IncomingHttpHeaders, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { ResolvedAddress } from "./address-policy.js";

/** Bytes of a non-2xx response body kept for the error message. */
const EXCERPT_BYTES = 512;

/** One request to send. */
export interface HttpExchange {
  url: URL;
  method: string;
  headers: Readonly<Record<string, string>>;
  body: Uint8Array;
  /** Bounds the whole exchange: connect, send, and the response head (and excerpt). */
  timeoutMs: number;
  /** The checked addresses to connect to, in preference order. */
  addresses: readonly ResolvedAddress[];
  /** Aborts the exchange early; it then ends as a network error. */
  signal?: AbortSignal;
  /** Trusted certificate authorities for https, replacing Node's bundled ones when set. */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
}

/** How an exchange ended. */
export type HttpExchangeResult =
  | { kind: "response"; status: number; headers: IncomingHttpHeaders; bodyExcerpt: string }
  | { kind: "timeout"; timeoutMs: number }
  | { kind: "network"; error: Error };

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http.request that answers only with `addresses`. */
export function pinnedLookup(addresses: readonly ResolvedAddress[]) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const want = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
    const list = want === 0 ? addresses : addresses.filter((a) => a.family === want);
    if (list.length === 0) {
      const err: NodeJS.ErrnoException = new Error(`no checked IPv${want} address for ${hostname}`);
      err.code = "ENOTFOUND";
      callback(err, "", 0);
    } else if (options.all) {
      callback(
        null,
        list.map((a) => ({ address: a.address, family: a.family })),
      );
    } else {
      callback(null, list[0]!.address, list[0]!.family);
    }
  };
}

class ExchangeTimeout extends Error {}

/**
 * Sends one request and resolves with how it ended; never rejects. A 2xx
 * resolves as soon as the status arrives (the body is not read);
 * other statuses wait for up to 512 bytes of body for diagnostics.
 */
export function sendHttp(x: HttpExchange): Promise<HttpExchangeResult> {
  return new Promise<HttpExchangeResult>((resolve) => {
    let settled = false;
    const finish = (r: HttpExchangeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      x.signal?.removeEventListener("abort", onAbort);
      resolve(r);
    };
    const send = x.url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = send(x.url, {
      method: x.method,
      headers: { ...x.headers, "content-length": String(x.body.length) },
      lookup: pinnedLookup(x.addresses),
      agent: false,
      ...(x.ca === undefined ? {} : { ca: x.ca as string | Buffer | Array<string | Buffer> }),
    });
    const timer = setTimeout(() => req.destroy(new ExchangeTimeout()), x.timeoutMs);
    const onAbort = () => req.destroy(x.signal?.reason instanceof Error ? x.signal.reason : new Error("delivery aborted"));
    if (x.signal?.aborted) onAbort();
    else x.signal?.addEventListener("abort", onAbort, { once: true });

    req.on("error", (err) => {
      if (err instanceof ExchangeTimeout) finish({ kind: "timeout", timeoutMs: x.timeoutMs });
      else finish({ kind: "network", error: err });
    });
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status <= 299) {
        finish({ kind: "response", status, headers: res.headers, bodyExcerpt: "" });
        // The delivery is done once the status is in; an unread (possibly endless) body must not hold the socket.
        res.on("error", () => {});
        res.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        const bodyExcerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString("utf8");
        finish({ kind: "response", status, headers: res.headers, bodyExcerpt });
        res.destroy();
      };
      res.on("data", (c: Buffer) => {
        chunks.push(c);
        size += c.length;
        if (size >= EXCERPT_BYTES) done();
      });
      res.on("end", done);
      // A body cut short after the head still leaves a usable status.
      res.on("error", done);
    });
    req.end(x.body);
  });
}
