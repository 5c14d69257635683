/**
 * @module What a step's settlement hands to the run's next step when it
 * claimed that step itself (`ackClaimingNext`): the run record and the
 * step pointer it read or wrote, as bytes and decoded.
 *
 * The next step still checks both records (another runtime may have
 * cancelled, ended or moved the run meanwhile); it skips reading the run
 * record while the key's value token is the carried one (the record was not
 * written since), and skips decoding a record whose stored bytes equal the
 * carried bytes, since equal bytes decode to equal records. The records' KV
 * keys go along too, with their references (`Queue.kvKeyRef`, see
 * queue/user-keys): made once per run, so no step validates, prefixes or
 * looks them up again. Handed to the next step's worker slot with the job
 * (`SlotChain.handOff`), so it goes with it and is taken once.
 */
import type { KvToken } from "../../queue/queue.js";
import type { KvKeyPrefixRef, KvKeyRef } from "../../queue/user-keys.js";
import { bytesEqual } from "../../store/bytes-equal.js";
import type { MemoStore } from "../memo/memo.js";
import type { RunRecord, StepPointer } from "../records/records.js";
import type { RunId } from "../runs/run-id.js";

/** A record with the exact bytes it was decoded from (or encoded to). */
export interface Known<T> {
  readonly bytes: Uint8Array;
  readonly value: T;
  /** The stored value's token taken in the turn `bytes` were read (`Queue.kvTokenNow`), when known: while it is the key's token, the record is unchanged. */
  readonly token?: KvToken | undefined;
}

/** The KV keys of a run's run record and step pointer, and what to read and write them by: their references when the queue makes them (`kvKeyRef`), else the keys. */
export interface RunKeys {
  /** The run they are of, checked to be a run id before they were made. */
  readonly runId: RunId;
  readonly run: string;
  readonly pointer: string;
  readonly runAt: string | KvKeyRef;
  readonly pointerAt: string | KvKeyRef;
  /** The prefix of the run's history entries, checked once: each step's entry is staged under it (see `stageCommitOnlyUnder`). */
  readonly history: KvKeyPrefixRef;
}

/** The run's records as the settlement that claimed the next step left them, and their keys. */
export interface CarriedRun {
  readonly run: Known<RunRecord>;
  readonly pointer: Known<StepPointer>;
  readonly keys: RunKeys;
  /** Where the run keeps its memos, as `run`'s memo prefix names them: the next step's while it reads that record unchanged. */
  readonly memos: MemoStore;
}

/** `known`'s value when `bytes` are the same bytes, else `decode(bytes, key)` (`key`: where they were read, for its errors). */
export function decodeKnown<T>(bytes: Uint8Array, known: Known<T> | undefined, decode: (b: Uint8Array, key: string) => T, key: string): T {
  return known !== undefined && (bytes === known.bytes || bytesEqual(bytes, known.bytes)) ? known.value : decode(bytes, key);
}
