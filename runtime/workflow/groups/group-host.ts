/**
 * @module What run groups need from their runtime, resolved once by the
 * runtime, and the retention sweep over `workflow/group-terminals/`.
 */
import type { TimedClock } from "../../clock.js";
import { decodeRetained, type RetainedGroup } from "./group-marker.js";
import { groupTerminalMarkers } from "./group-keys.js";
import type { MemoStore } from "../memo/memo.js";
import type { WorkflowQueue } from "../queue-port.js";
import { KeyedLock, type RunEvents } from "../runs/run-events.js";
import type { RunId } from "../runs/run-id.js";
import type { RunSpec, SubmitOutcome } from "../runs/run-types.js";
import type { WorkflowView } from "../runs/workflow-view.js";
import type { ShardPlacement } from "../runs/shard-placement.js";
import { repeatEvery } from "../worker-lifecycle.js";

/** The runtime services a run group uses. */
export interface GroupHost {
  readonly queue: WorkflowQueue;
  /** The runtime's step queue: member records and retention markers are scoped by it. */
  readonly queueName: string;
  readonly memos: MemoStore;
  readonly clock: TimedClock;
  readonly events: RunEvents;
  readonly view: WorkflowView;
  readonly pollIntervalMs: number;
  /** The shard of a sharded store the runtime runs on: member run ids get a suffix that routes clients there (see `shard-placement`). */
  readonly placement: ShardPlacement | undefined;
  /** Removal window after a results consumer saw the last termination; undefined keeps groups until forgotten. */
  readonly retentionMs: number | undefined;
  /** Submits a run as member `key` of the group tagged `tag` (member record written with step 0). */
  submitMember(tag: string, key: string, spec: RunSpec, groupId: string): Promise<SubmitOutcome>;
  cancel(runId: RunId): Promise<boolean>;
  /** Serializes manifest updates of one group (keyed by tag) and submissions of one member (keyed `member:{runId}`) within the process. */
  readonly manifestLock: KeyedLock;
  /** Extra state a layer above keeps per member run (job results); removed when a group is forgotten. */
  readonly memberCleanups: Array<(runId: RunId) => Promise<void>>;
}

/** Markers read per sweep page. */
const PAGE = 256;

/**
 * Group retention: removes every group whose marker expired. A group with an
 * active member (resumed after its results were read) is kept; its next
 * complete read of results writes a new marker. Markers are ordered by
 * expiry, so a pass reads from the front and stops at the first unexpired
 * one: a pass with nothing due costs one KV scan. Markers may be written by
 * any runtime over the queue, so no in-memory schedule is trusted.
 */
export class GroupSweeper {
  readonly #host: GroupHost;
  readonly #forget: (group: RetainedGroup) => Promise<boolean>;

  constructor(host: GroupHost, forget: (group: RetainedGroup) => Promise<boolean>) {
    this.#host = host;
    this.#forget = forget;
  }

  /** One pass; returns how many groups it removed. */
  async sweep(): Promise<number> {
    const { queue, clock, queueName } = this.#host;
    const now = clock.now();
    let removed = 0;
    for (;;) {
      const expired = await groupTerminalMarkers(queueName).scanExpired(queue, now, PAGE);
      for (const m of expired) {
        if (await this.#forget(decodeRetained(m.value, m.key))) removed++;
        await queue.kvCompareAndDelete(m.key, m.value);
      }
      if (expired.length < PAGE) return removed;
    }
  }

  /** Sweeps at every poll interval until `signal` aborts. */
  loop(signal: AbortSignal, onError: (e: unknown) => void): Promise<void> {
    const { queue, clock, pollIntervalMs } = this.#host;
    return repeatEvery({ clock, intervalMs: pollIntervalMs, queue }, signal, () => this.sweep(), onError);
  }
}

export { KeyedLock };
