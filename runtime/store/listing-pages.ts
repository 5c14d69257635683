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
 * answered twice, a truncated page without one, or more than
 * `MAX_PAGES_WITHOUT_PROGRESS` truncated pages in a row that list keys but
 * none past every key listed before them (a service that ignores the token
 * but gives a new one each time) refuse the listing too: it would never
 * end, or end short. A truncated page listing no key at all is S3's answer
 * over a long run of delete markers, and many may follow one another: only
 * more than `MAX_EMPTY_PAGES` in a row refuse the listing. Memory: the keys
 * of two pages and the tokens given since a page last listed a key past
 * those before it (a token given before that cannot come back without
 * the keys after it coming back too, which is no progress).
 */
import { StoreRequestError } from "../errors.js";
import { compareKeys } from "./keys.js";
import type { ListedObject, ListOptions, ObjectStore } from "./object-store.js";

/**
 * Truncated pages in a row that list keys but none past what the listing
 * held before them, tolerated: a page answered again (some proxies). One
 * more is a service answering the same page for ever. Empty pages among
 * them count towards `MAX_EMPTY_PAGES` instead.
 */
export const MAX_PAGES_WITHOUT_PROGRESS = 3;

/**
 * Truncated pages in a row that list no key at all (and none past what
 * the listing held before them), tolerated: S3 answers such pages while it
 * walks past delete markers, up to 1,000 a page, so this passes ten
 * million in a row. One more is a service that answers an empty page for
 * ever.
 */
export const MAX_EMPTY_PAGES = 10_000;

export class ListingPages {
  readonly #where: string;
  readonly #prefix: string;
  readonly #listed: string;
  readonly #startAfter: string | undefined;
  /** The last key taken. */
  #last: string | undefined;
  /** The keys under the prefix past start-after that the page before and this page listed, taken or answered again. */
  #previous = new Set<string>();
  #current = new Set<string>();
  readonly #tokens = new Set<string>();
  /** The greatest key the service listed, in or out of the prefix: how far its listing got. */
  #furthest: string | undefined;
  /** Whether this page listed a key past `#furthest` as it was before the page. */
  #moved = false;
  /** Truncated pages in a row that did not. */
  #stalled = 0;
  /** Whether this page listed any key, in or out of the prefix. */
  #listedAny = false;
  /** Of the `#stalled` pages, those that listed a key (pages answered again, not empty ones). */
  #stalledListing = 0;
  /** The order the service lists in. */
  readonly #order: (a: string, b: string) => number;

  /**
   * `where`: the service and bucket, for messages; `prefix`: the whole key
   * prefix asked for; `listed`: the caller's prefix, which messages name;
   * `startAfter`: the whole key the listing starts after; `order`: the
   * order the service lists keys in, for `listedAgain` (UTF-8 by default,
   * the one `take` checks).
   */
  constructor(where: string, prefix: string, listed: string, startAfter: string | undefined, order: (a: string, b: string) => number = compareKeys) {
    this.#order = order;
    this.#where = where;
    this.#prefix = prefix;
    this.#listed = listed;
    this.#startAfter = startAfter;
  }

  /** Notes a key the service listed (whole, in or out of the prefix), for how far its listing got. */
  #saw(key: string): void {
    this.#listedAny = true;
    if (this.#furthest === undefined || this.#order(key, this.#furthest) > 0) {
      this.#furthest = key;
      this.#moved = true;
    }
  }

  /**
   * For a listing whose keys are not taken here (their order and range
   * held elsewhere): notes the listed `key` (whole) and says whether this
   * page or the one before already listed it, a page answered again whose
   * key is then left out.
   */
  listedAgain(key: string): boolean {
    this.#saw(key);
    if (this.#current.has(key) || this.#previous.has(key)) {
      this.#current.add(key);
      return true;
    }
    this.#current.add(key);
    return false;
  }

  /** Whether the listed `key` (whole) belongs to the listing; refuses a key out of order. */
  take(key: string): boolean {
    this.#listedAny = true;
    const furthest = this.#furthest;
    const beyond = furthest === undefined || compareKeys(key, furthest) > 0;
    if (beyond) {
      this.#furthest = key;
      this.#moved = true;
    }
    if (!key.startsWith(this.#prefix)) return false;
    const last = this.#last;
    // The last key taken is at most the furthest listed: a key beyond that is past it, and past start-after once one was taken.
    if (this.#startAfter !== undefined && !(beyond && last !== undefined) && compareKeys(key, this.#startAfter) <= 0) return false;
    if (!beyond && last !== undefined && compareKeys(key, last) <= 0) {
      // Kept in this page's keys too: a page answered a third time is still known as answered again.
      if (this.#current.has(key) || this.#previous.has(key)) {
        this.#current.add(key);
        return false;
      }
      throw new StoreRequestError(
        "list",
        this.#listed,
        `${this.#where} listed ${JSON.stringify(key)} after ${JSON.stringify(last)}, out of the key order its listings must keep, so the keys it left out cannot be known; use a store whose listings keep key order`,
      );
    }
    this.#current.add(key);
    this.#last = key;
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
    // A new token each time does not make a page answered again progress: counted, so that such a loop ends.
    if (this.#moved) {
      this.#stalled = 0;
      this.#stalledListing = 0;
      this.#tokens.clear();
    } else {
      this.#stalled++;
      if (this.#listedAny) this.#stalledListing++;
    }
    this.#moved = false;
    this.#listedAny = false;
    if (this.#stalledListing > MAX_PAGES_WITHOUT_PROGRESS) {
      throw refused(`answered ${this.#stalled} truncated pages in a row that list no key past those it listed before them`);
    }
    if (this.#stalled > MAX_EMPTY_PAGES) throw refused(`answered ${this.#stalled} truncated pages in a row that list no key`);
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
