/**
 * @module The run groups of one runtime: names groups, runs group
 * retention, and lets a layer above (typed jobs) add per-member state to
 * what forgetting a group removes.
 */
import { GroupSweeper, KeyedLock, type GroupHost } from "./group-host.js";
import { forgetGroup, forgetGroupPart, RunGroup } from "./run-group.js";
import { RunId } from "../runs/run-id.js";

/** @internal Held by `WorkflowRuntime`; the runtime exposes `group`, `newGroup` and `sweepGroups`. */
export class RunGroups {
  readonly #host: GroupHost;
  readonly #sweeper: GroupSweeper;

  constructor(host: Omit<GroupHost, "manifestLock" | "memberCleanups">) {
    this.#host = { ...host, manifestLock: new KeyedLock(), memberCleanups: [] };
    this.#sweeper = new GroupSweeper(this.#host, (g) =>
      g.part === undefined ? forgetGroup(this.#host, g.groupId, true) : forgetGroupPart(this.#host, g.groupId, g.part, true),
    );
  }

  /** The group `id` (any non-empty text up to 512 bytes). Naming a group writes nothing. */
  group(id: string): RunGroup {
    return new RunGroup(this.#host, id);
  }

  /** A group with a fresh ULID id. */
  newGroup(): RunGroup {
    return this.group(RunId.generate(this.#host.clock.now()));
  }

  /** Adds per-member-run cleanup to what forgetting a group (or its retention) removes. */
  addMemberCleanup(cleanup: (runId: RunId) => Promise<void>): void {
    this.#host.memberCleanups.push(cleanup);
  }

  /** Whether group retention is configured. */
  get retains(): boolean {
    return this.#host.retentionMs !== undefined;
  }

  /** One retention pass; returns how many groups it removed. */
  sweep(): Promise<number> {
    return this.#sweeper.sweep();
  }

  /** Sweeps at every poll interval until `signal` aborts. */
  sweepLoop(signal: AbortSignal, onError: (e: unknown) => void): Promise<void> {
    return this.#sweeper.loop(signal, onError);
  }
}
