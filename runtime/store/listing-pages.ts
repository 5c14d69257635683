/**
 * @module Holds a paged listing from a service to what `ObjectStore.list`
 * promises: keys under the prefix, after start-after, each once, in UTF-8
 * order, and an end only where the listing ends. Some S3-compatible services
 * and proxies ignore start-after or the prefix, answer a page twice, or
 * ignore a continuation token; taken as they come, the first two list keys
 * the caller never asked for, the third repeats keys, and the last loops on
 * the first page for ever.
 *
 * Keys outside the prefix or at or before start-after are left out (they are
 * not part of the listing asked for). A key at or before the last one taken
 * is left out when the page before or this one already held it (a page
 * answered again); any other such key is out of order, and the listing is
 * refused, since the keys it skipped cannot be known. A continuation token
 * answered twice, or a truncated page without one, refuses the listing too:
 * it would never end, or end short. Memory: the keys of two pages and the
 * tokens of the listing.
 */
import { StoreRequestError } from "../errors.js";
import { compareKeys } from "./keys.js";
import type { ListedObject, ListOptions, ObjectStore } from "./object-store.js";

export class ListingPages {
  readonly #where: string;
  readonly #prefix: string;
  readonly #listed: string;
  #after: string | undefined;
  #previous = new Set<string>();
  #current = new Set<string>();
  readonly #tokens = new Set<string>();

  /**
   * `where`: the service and bucket, for messages; `prefix`: the whole key
   * prefix asked for; `listed`: the caller's prefix, which messages name;
   * `startAfter`: the whole key the listing starts after.
   */
  constructor(where: string, prefix: string, listed: string, startAfter: string | undefined) {
    this.#where = where;
    this.#prefix = prefix;
    this.#listed = listed;
    this.#after = startAfter;
  }

  /** Whether the listed `key` (whole) belongs to the listing; refuses a key out of order. */
  take(key: string): boolean {
    if (!key.startsWith(this.#prefix)) return false;
    const after = this.#after;
    if (after !== undefined && compareKeys(key, after) <= 0) {
      if (this.#current.size + this.#previous.size === 0 || this.#current.has(key) || this.#previous.has(key)) return false;
      throw new StoreRequestError(
        "list",
        this.#listed,
        `${this.#where} listed ${JSON.stringify(key)} after ${JSON.stringify(after)}, out of the key order its listings must keep, so the keys it left out cannot be known; use a store whose listings keep key order`,
      );
    }
    this.#current.add(key);
    this.#after = key;
    return true;
  }

  /**
   * After a page: the token to ask the next page with, or undefined when
   * the listing ended. `truncated` is whether the page said more follow.
   */
  next(truncated: boolean, token: string | undefined): string | undefined {
    this.#previous = this.#current;
    this.#current = new Set();
    if (!truncated) return undefined;
    const refused = (detail: string) =>
      new StoreRequestError(
        "list",
        this.#listed,
        `${this.#where} ${detail}, so the listing would never end or end short; use a service whose listings follow the continuation tokens they give`,
      );
    if (token === undefined || token === "") throw refused("said a page of its listing was truncated but gave no continuation token");
    if (this.#tokens.has(token)) throw refused("answered the same continuation token twice in one listing");
    this.#tokens.add(token);
    return token;
  }
}

/**
 * `store.list(prefix, opts)` with what it lists held to what was asked: keys
 * outside `prefix`, or at or before `opts.startAfter`, left out. For
 * callers that read any key listed as the answer (whether a folder holds
 * anything, what it holds), over stores a user wrote, which may ignore
 * either.
 */
export async function* listedUnder(store: ObjectStore, prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
  const { startAfter } = opts;
  for await (const o of store.list(prefix, opts)) {
    if (!o.key.startsWith(prefix) || (startAfter !== undefined && compareKeys(o.key, startAfter) <= 0)) continue;
    yield o;
  }
}

/**
 * `listedUnder`, and a key at or before the one listed before it refused
 * with `StoreRequestError`: for callers that act on what they list in key
 * order (requests applied in submission order, a sweep that stops at the
 * first key too new), where a key listed again would be acted on twice and
 * one out of order would be acted on out of turn or, past a stop, never.
 * Only the last key is kept, so a repeat cannot be told from disorder: both
 * refuse the listing. `where` names the store in the message.
 */
export async function* listedInOrder(store: ObjectStore, prefix: string, where: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
  let last: string | undefined;
  for await (const o of listedUnder(store, prefix, opts)) {
    if (last !== undefined && compareKeys(o.key, last) <= 0) {
      throw new StoreRequestError(
        "list",
        prefix,
        `${where} listed ${JSON.stringify(o.key)} after ${JSON.stringify(last)}, out of key order or a second time, so what it lists cannot be acted on in order; use a store whose listings keep key order and list each key once`,
      );
    }
    last = o.key;
    yield o;
  }
}
