/**
 * @module Warming job records before a transaction reads them. An engine
 * with paged values keeps a job record that no commit touched since the
 * last checkpoint only in its segments; `Engine.warm` loads it into the
 * engine's cache. A transaction warms the records it will read, then reads
 * and commits in one turn, as every transaction here does.
 */
import * as K from "./keys.js";
import type { ReadSource } from "./txn.js";

/**
 * Undefined when the records of `ids` can be read synchronously now (always
 * without paging), else a promise that resolves once their loading ends.
 * Call it again after that, until it returns undefined, and then read in
 * the same synchronous run: a compaction may have moved a record meanwhile.
 *
 * @example
 * for (let w = warmJobs(engine, ids); w !== undefined; w = warmJobs(engine, ids)) await w;
 */
export function warmJobs(src: ReadSource, ids: readonly string[]): Promise<void> | undefined {
  if (src.warm === undefined) return undefined;
  return src.warm(ids.map(K.jobKey));
}
