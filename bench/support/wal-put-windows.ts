/**
 * @module The WAL's puts (conditional creates, `ifNoneMatch: "*"`) counted
 * while switched on: how many, their bytes, how many were issued beside
 * another in flight, the wall time with a put in flight and the event
 * loop's idle time during it (what a cycle waits beyond the main thread's
 * work). Other puts pass uncounted.
 */
import { performance } from "node:perf_hooks";
import type { PutOptions } from "../../runtime/index.js";

/** What has a `put`: a store, or a store class's prototype. */
interface Puts {
  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }>;
}

export class WalPutWindows {
  on = false;
  puts = 0;
  bytes = 0;
  beside = 0;
  inFlightMs = 0;
  idleInFlightMs = 0;
  #inFlight = 0;
  #windowStart = 0;
  #windowElu = performance.eventLoopUtilization();

  /** Zeroes the counts and counts from now on. */
  start(): void {
    Object.assign(this, { on: true, puts: 0, bytes: 0, beside: 0, inFlightMs: 0, idleInFlightMs: 0 });
    this.#inFlight = 0;
  }

  /** Replaces `target.put` with one that counts into these windows while `on`. */
  wrap(target: Puts): void {
    const put = target.put;
    const w = this;
    target.put = async function (this: unknown, key: string, body: Uint8Array, opts?: PutOptions) {
      if (!w.on || opts?.ifNoneMatch !== "*") return put.call(this, key, body, opts);
      w.puts++;
      w.bytes += body.length;
      if (w.#inFlight++ === 0) {
        w.#windowStart = performance.now();
        w.#windowElu = performance.eventLoopUtilization();
      } else w.beside++;
      try {
        return await put.call(this, key, body, opts);
      } finally {
        if (--w.#inFlight === 0) {
          w.inFlightMs += performance.now() - w.#windowStart;
          w.idleInFlightMs += performance.eventLoopUtilization(w.#windowElu).idle;
        }
      }
    };
  }
}
