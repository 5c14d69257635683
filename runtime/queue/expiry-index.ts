/**
 * @module `ExpiryIndex`: durable entries in the caller KV namespace ordered
 * by expiry time, read from the front.
 *
 * An entry's key is `prefix + <expiry ms, 16 zero-padded digits> + suffix`,
 * so byte order is expiry order and a sweep reads the expired set from the
 * start of the range and stops at the first unexpired entry.
 */
import { ValidationError } from "../errors.js";
import { validateInstant } from "../time-bounds.js";
import type { SettlementEffects } from "./effects.js";
import { padTime, TIME_WIDTH } from "./keys.js";
import { validateKvPrefix } from "./names.js";
import type { KvPage, KvScanOptions } from "./view.js";

const DIGITS_RE = new RegExp(`^\\d{${TIME_WIDTH}}$`);
const EMPTY = new Uint8Array(0);

/** One entry of an `ExpiryIndex`. */
export interface ExpiryEntry {
  /** The full caller KV key. */
  key: string;
  expiresAt: number;
  suffix: string;
  value: Uint8Array;
}

/** Anything that can page through caller KV: a `Queue`, a `QueueView`, a `QueueReader`. */
export interface KvScanner {
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage>;
}

/**
 * @example
 * const idx = new ExpiryIndex("app/expiry/");
 * await queue.ack(job, idx.add(new SettlementEffects(), clock.now() + 60_000, "run-1"));
 * for (const e of await idx.scanExpired(queue, clock.now())) ...
 */
export class ExpiryIndex {
  /**
   * @param prefix the caller KV prefix the entries live under (non-empty, owned by this index)
   * @param source where `scanExpired(now)` reads when called without one (a `Queue`, view or reader)
   */
  constructor(
    readonly prefix: string,
    readonly source?: KvScanner,
  ) {
    validateKvPrefix(prefix);
    if (prefix.length === 0) throw new ValidationError("an ExpiryIndex needs a non-empty prefix of its own");
  }

  /** The KV key of the entry `(expiresAt, suffix)`. */
  key(expiresAt: number, suffix: string): string {
    validateInstant("expiresAt", expiresAt);
    return this.prefix + padTime(expiresAt) + suffix;
  }

  /** Stages the entry on `effects` (so it commits with whatever they ride on) and returns them. */
  add(effects: SettlementEffects, expiresAt: number, suffix: string, value: Uint8Array = EMPTY): SettlementEffects {
    return effects.kvPut(this.key(expiresAt, suffix), value);
  }

  /** Stages the removal of an entry. */
  remove(effects: SettlementEffects, expiresAt: number, suffix: string): SettlementEffects {
    return effects.kvDelete(this.key(expiresAt, suffix));
  }

  /** Parses a key of this index, or undefined when it is not one. */
  parse(key: string): { expiresAt: number; suffix: string } | undefined {
    if (!key.startsWith(this.prefix)) return undefined;
    const digits = key.slice(this.prefix.length, this.prefix.length + TIME_WIDTH);
    if (!DIGITS_RE.test(digits)) return undefined;
    return { expiresAt: Number(digits), suffix: key.slice(this.prefix.length + TIME_WIDTH) };
  }

  /** Entries expired at or before `now`, earliest first, at most `limit` (default 100), read from the bound source. */
  scanExpired(now: number, limit?: number): Promise<ExpiryEntry[]>;
  /** The same, read from `source`. */
  scanExpired(source: KvScanner, now: number, limit?: number): Promise<ExpiryEntry[]>;
  scanExpired(a: KvScanner | number, b?: number, c?: number): Promise<ExpiryEntry[]> {
    if (typeof a === "number") {
      if (this.source === undefined)
        return Promise.reject(new ValidationError("this ExpiryIndex has no source; pass one to the constructor or to scanExpired"));
      return this.#scan(this.source, a, b ?? 100);
    }
    return this.#scan(a, b!, c ?? 100);
  }

  async #scan(source: KvScanner, now: number, limit: number): Promise<ExpiryEntry[]> {
    const out: ExpiryEntry[] = [];
    let after: string | undefined;
    while (out.length < limit) {
      const page = await source.kvScan(this.prefix, { limit: limit - out.length, ...(after === undefined ? {} : { after }) });
      for (const { key, value } of page.entries) {
        const p = this.parse(key);
        if (p === undefined) continue;
        if (p.expiresAt > now) return out;
        out.push({ key, expiresAt: p.expiresAt, suffix: p.suffix, value });
      }
      if (page.nextCursor === undefined) return out;
      after = page.nextCursor;
    }
    return out;
  }
}
