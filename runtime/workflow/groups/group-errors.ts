/**
 * @module Errors of run groups. Each reports a caller's mistake and is
 * thrown before anything durable changes.
 */
import { StoreCorruptedError, TaqubaError, type TaqubaErrorCode } from "../../errors.js";

/** The group has no manifest: never submitted, forgotten, or swept by group retention. */
export class GroupNotFoundError extends TaqubaError {
  constructor(readonly groupId: string) {
    super("GROUP_NOT_FOUND", `run group "${groupId}" has no manifest: submit members first (it may have been forgotten or swept by group retention)`);
  }
}

/** `forget` was called while members are still active. */
export class GroupActiveError extends TaqubaError {
  constructor(
    readonly groupId: string,
    readonly active: number,
  ) {
    super("GROUP_ACTIVE", `run group "${groupId}" has ${active} active member(s); cancel the group and wait for its results before forgetting it`);
  }
}

/**
 * A group member record that does not read (a `StoreCorruptedError` of its
 * key), with the member's run: as the record still names it, else as the
 * group's host derives it, routed to its shard on a sharded store (the key
 * alone lacks the route suffix `-rN`), so the operator's text names the run
 * to repair. Its code is `GROUP_MEMBER_DAMAGED`.
 */
export class GroupMemberDamagedError extends StoreCorruptedError {
  static override readonly errorCode: TaqubaErrorCode = "GROUP_MEMBER_DAMAGED";

  constructor(
    objectKey: string,
    detail: string,
    readonly memberRunId: string,
  ) {
    super(objectKey, detail);
  }
}
