/**
 * @module Key heads a queue's caller declares (`Queue.declareKeyHeads`):
 * prefixes of its own KV keys that it reads and writes heavily, which the
 * engine's memtable then gives trees of their own (engine/key-heads.ts).
 * The caller names prefixes in its own keyspace; the queue puts its caller
 * prefix before each, so the caller never names the queue's layout, and the
 * engine never names the caller's.
 */
import { checkedKeyHeads, MAX_KEY_HEAD_LENGTH } from "../engine/key-heads.js";
import { USER, userKey } from "./keys.js";

/** What the errors call the list. */
const WHAT = "declareKeyHeads' prefixes";

/**
 * The engine prefixes of caller prefixes `given`, checked in the caller's
 * terms as `EngineOptions.keyHeads` is (an array of at most 32 distinct,
 * non-empty ASCII strings; each as much shorter as the queue's caller prefix
 * is long). Throws `ValidationError` otherwise.
 */
export function engineKeyHeads(given: readonly string[]): string[] {
  return checkedKeyHeads(given, WHAT, MAX_KEY_HEAD_LENGTH - USER.length).map(userKey);
}

/** The caller prefixes among an engine's key heads (`Engine.keyHeads`), ascending. */
export function callerKeyHeads(engineHeads: readonly string[]): string[] {
  return engineHeads.filter((p) => p.startsWith(USER) && p.length > USER.length).map((p) => p.slice(USER.length));
}
