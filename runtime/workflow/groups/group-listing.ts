/**
 * @module The public shape of group listings: each run group of a step
 * queue with how many members are in each state.
 */

/** What `listGroups` takes. */
export interface ListGroupsOptions {
  /** The `nextCursor` of the previous page. */
  readonly cursor?: string;
  /** Most groups in the page: 1 to 100, default 20 (each group's member records are counted). */
  readonly limit?: number;
}

/** Member counts of one group, from its member records. */
export interface GroupMemberCounts {
  /** Members submitted (a group's manifest may list more that a crash left unsubmitted: `RunGroup.status` counts those). */
  readonly total: number;
  readonly active: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly cancelled: number;
}

/** One group as a listing reports it. */
export interface GroupRow {
  readonly groupId: string;
  /** When its first member was submitted (epoch ms). */
  readonly createdAtMs: number;
  readonly members: GroupMemberCounts;
}

/** Which record of a group the listing found damaged, and what is wrong with it (without its key). */
export interface GroupDamage {
  /** `index_entry`: the group's listing entry; `member`: a member's record. */
  readonly record: "index_entry" | "member";
  readonly detail: string;
  /** For a member record: the member's key. */
  readonly memberKey?: string;
  /** For a member record: the member's run, as the record still names it (else as the group and key derive it). */
  readonly runId?: string;
}

/** A group the listing could not count (a damaged member record or index entry); the other groups are still listed. */
export interface UnreadableGroup {
  /** The group's id, or its storage tag when its damaged index entry no longer holds the id (the reason then names the group by its creation time). */
  readonly groupId: string;
  readonly reason: string;
  /** The damaged record as fields, when a record failed its check (absent for other failures). */
  readonly damage?: GroupDamage;
}

/** One page of a group listing, newest group first. */
export interface GroupPage {
  readonly groups: readonly GroupRow[];
  /** Pass as `cursor` for the next page; absent when the listing is done. */
  readonly nextCursor?: string;
  /** Groups left out because a record of theirs could not be read; absent when none. */
  readonly unreadable?: readonly UnreadableGroup[];
}
