/**
 * @module The contract guard: a worker older than the contract that last
 * ran over a store refuses to start.
 *
 * Every generated job and workflow definition carries its contract hash
 * (the hash of its normalised spec entry, as the contract lock records it).
 * The store keeps, per step queue and definition, the hashes workers have
 * started under, oldest first. A worker starting with the newest hash goes
 * ahead; one with a hash never seen is newer and is appended; one with a
 * hash seen before but not the newest is older than the code that last ran,
 * so it would read records shaped by a contract it does not know, and it
 * refuses with `ContractTooOldError` unless a downgrade is allowed (which
 * then forgets the contracts after it, so rolling forward works again).
 */
import { TaqubaError, ValidationError } from "../errors.js";
import { describeValue, hasMethods, readOptionArray, readOptions } from "../option-values.js";
import { lastOf } from "../own-fields.js";
import { validateQueueName } from "../queue/names.js";
import { decodeValue, encodeValue } from "../workflow/records/codec.js";
import { RESERVED_KV_PREFIX } from "../workflow/records/reserved.js";
import type { WorkflowQueue } from "../workflow/queue-port.js";

/** A registered definition's name and contract hash. */
export interface ContractEntry {
  readonly name: string;
  readonly hash: string;
}

/** How many hashes of one definition the history keeps; older ones are forgotten. */
const HISTORY_LIMIT = 64;

export const contractKey = (queueName: string, name: string): string => `${RESERVED_KV_PREFIX}contracts/${queueName}/${name}`;

/** A worker's definition is older than the one that last ran over this store. */
export class ContractTooOldError extends TaqubaError {
  constructor(
    readonly definition: string,
    readonly hash: string,
    readonly newest: string,
  ) {
    super(
      "CONTRACT_TOO_OLD",
      `"${definition}" has contract ${hash}, but a worker with the newer contract ${newest} already ran over this store; deploy the newer code, or, if this rollback is intended, start once with allowContractDowngrade()`,
    );
  }
}

function decodeHistory(bytes: Uint8Array | null): string[] {
  if (bytes === null) return [];
  const v = decodeValue(bytes) as { hashes?: unknown };
  return Array.isArray(v.hashes) ? v.hashes.filter((h): h is string => typeof h === "string") : [];
}

/** More definitions than one worker registers; a Proxy may claim 2^32 - 1 entries. */
const MAX_CONTRACTS = 100_000;

/**
 * Checks every contract against the store's history, then records the
 * current ones as the newest. Throws `ContractTooOldError`, recording
 * nothing, when one is older than the newest recorded, unless
 * `allowDowngrade`.
 */
export async function checkContracts(queue: WorkflowQueue, queueName: string, given: readonly ContractEntry[], allowDowngrade = false): Promise<void> {
  // Arguments checked (each entry read once) before anything is read or written.
  if (!hasMethods(queue, ["kvGet", "kvCompareAndPut"]))
    throw new ValidationError(`checkContracts takes a queue (kvGet, kvCompareAndPut), got ${describeValue(queue)}`);
  validateQueueName(queueName);
  const contracts = readOptionArray("contracts", given, "an array of { name, hash }", MAX_CONTRACTS).map((c, i) => {
    const { name, hash } = readOptions(c, ["name", "hash"], `contracts[${i}]`);
    if (typeof name !== "string" || typeof hash !== "string")
      throw new ValidationError(`contracts[${i}] must have a name and a hash, both strings, got ${describeValue(name)} and ${describeValue(hash)}`);
    return { name, hash };
  });
  // Compare-and-put, started over on a lost race: another runtime in this
  // process may record at the same time.
  for (;;) {
    const reads = await Promise.all(
      contracts.map(async (c) => {
        const key = contractKey(queueName, c.name);
        const current = await queue.kvGet(key);
        return { c, key, current, hashes: decodeHistory(current) };
      }),
    );
    const changes = reads.filter((r) => lastOf(r.hashes) !== r.c.hash);
    if (!allowDowngrade) {
      const older = changes.find((r) => r.hashes.includes(r.c.hash));
      if (older !== undefined) throw new ContractTooOldError(older.c.name, older.c.hash, lastOf(older.hashes)!);
    }
    let raced = false;
    for (const r of changes) {
      // A new contract is appended; an allowed rollback forgets the contracts after it, so
      // rolling forward again later counts as newer.
      const at = r.hashes.indexOf(r.c.hash);
      const next = at >= 0 ? r.hashes.slice(0, at + 1) : [...r.hashes, r.c.hash].slice(-HISTORY_LIMIT);
      if (!(await queue.kvCompareAndPut(r.key, r.current, encodeValue({ hashes: next })))) raced = true;
    }
    if (!raced) return;
  }
}
