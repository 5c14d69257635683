/**
 * @module A sharded group listing where one shard could not count a
 * group's members (a damaged member record): the merged page leaves that
 * group out whole and names it, rather than show the counts of the other
 * shards alone as the group's; the other groups are merged as before.
 */
import { describe, expect, it } from "vitest";
import type { GroupPage } from "taquba";
import { mergeGroupPages } from "../../runtime/client/shard-listing.js";

const T0 = 1_700_000_000_000;
const counts = (succeeded: number) => ({ total: succeeded, active: 0, succeeded, failed: 0, cancelled: 0 });

describe("a merged group listing over a shard with a damaged member record", () => {
  it("leaves the damaged group out, names it, and merges the others", async () => {
    const pages: GroupPage[] = [
      {
        groups: [
          { groupId: "batch", createdAtMs: T0, members: counts(2) },
          { groupId: "other", createdAtMs: T0 - 1, members: counts(1) },
        ],
      },
      { groups: [{ groupId: "other", createdAtMs: T0 - 1, members: counts(3) }], unreadable: [{ groupId: "batch", reason: "member a is damaged" }] },
    ];
    const page = await mergeGroupPages(2, 20, undefined, async (i) => pages[i]!);
    expect(page.groups).toEqual([{ groupId: "other", createdAtMs: T0 - 1, members: counts(4) }]);
    expect(page.unreadable).toEqual([{ groupId: "batch", reason: "member a is damaged" }]);
  });

  it("a page without damage has no unreadable field", async () => {
    const page = await mergeGroupPages(1, 20, undefined, async () => ({ groups: [{ groupId: "g", createdAtMs: T0, members: counts(1) }] }));
    expect(page).toEqual({ groups: [{ groupId: "g", createdAtMs: T0, members: counts(1) }] });
  });
});
