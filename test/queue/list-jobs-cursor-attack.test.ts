/**
 * @module A job listing's cursor that is not a cursor of the listing asked
 * for: one of another state or queue, garbage text, a value of another
 * kind. Each answered a page (empty, read as "no more jobs", or the first
 * page again) as if it were a position in the listing. Each must be refused
 * with a ValidationError naming the queue and state, through the queue's
 * view and the operator's `queue jobs --cursor`, while the cursors a page
 * hands out still page every job once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue, ValidationError } from "taquba";
import { main } from "../../operator/cli/main.js";
import { enc, openQueue } from "./helpers.js";

describe("a job listing's cursor from elsewhere", () => {
  it("is refused naming the queue and state, and the listing's own cursors page every job once", async () => {
    const { queue, clock } = await openQueue();
    const pendingA: string[] = [];
    for (let i = 0; i < 5; i++) pendingA.push((await queue.enqueue("a", enc(`a${i}`))).jobId);
    for (let i = 0; i < 3; i++) await queue.enqueue("b", enc(`b${i}`));
    for (let i = 0; i < 3; i++) await queue.enqueue("a", enc(`s${i}`), { runAt: clock.now() + 60_000 + i });
    const v = queue.view();
    const aPending = (await v.listJobs("a", "pending", { limit: 2 })).nextCursor!;
    const aScheduled = (await v.listJobs("a", "scheduled", { limit: 1 })).nextCursor!;
    const bPending = (await v.listJobs("b", "pending", { limit: 1 })).nextCursor!;
    expect([aPending, aScheduled, bPending].every((c) => typeof c === "string")).toBe(true);

    const refused: [string, Parameters<typeof v.listJobs>[1], unknown][] = [
      ["b", "pending", aPending],
      ["a", "pending", bPending],
      ["a", "dead", aPending],
      ["a", "done", aPending],
      ["a", "claimed", aPending],
      ["a", "scheduled", aPending],
      ["a", "pending", aScheduled],
      ["a", "pending", "zzz"],
      ["a", "pending", ""],
      ["a", "pending", 5],
      ["a", "pending", {}],
      ["a", "pending", null],
    ];
    for (const [name, state, cursor] of refused) {
      const what = `${name} ${state} ${JSON.stringify(cursor)}`;
      const err = await v.listJobs(name, state, { cursor: cursor as string }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(ValidationError);
      expect((err as Error).message, what).toContain(`queue "${name}"'s ${state} jobs`);
      expect((err as Error).message, what).toMatch(/nextCursor of the previous page/);
    }

    // The listing's own cursors: every pending job of "a" once, in order, two a page.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await v.listJobs("a", "pending", { limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      seen.push(...page.items.map((j) => j.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seen).toEqual(pendingA);
    // Scheduled keys of every queue share one timeline: another queue's scheduled cursor would start past
    // this queue's earlier jobs (an empty last page), so it is refused too.
    const bScheduledErr = await v.listJobs("b", "scheduled", { cursor: aScheduled }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(bScheduledErr).toBeInstanceOf(ValidationError);
    expect((bScheduledErr as Error).message).toContain(`queue "b"'s scheduled jobs`);
    await queue.close();
  });

  it("of another queue's scheduled jobs is refused, and a scheduled listing's own cursors page its queue's jobs once", async () => {
    const { queue, clock } = await openQueue();
    // b's jobs come first in the shared timeline: a cursor of a's would start past all of them.
    const scheduledB: string[] = [];
    for (let i = 1; i <= 5; i++) scheduledB.push((await queue.enqueue("b", enc(`b${i}`), { runAt: clock.now() + i * 60_000 })).jobId);
    for (let i = 10; i <= 14; i++) await queue.enqueue("a", enc(`a${i}`), { runAt: clock.now() + i * 60_000 });
    const v = queue.view();
    const aCursor = (await v.listJobs("a", "scheduled", { limit: 2 })).nextCursor!;
    const rawKey = aCursor.slice(aCursor.indexOf("@") + 1);
    for (const cursor of [aCursor, rawKey, "b@zzz"]) {
      const err = await v.listJobs("b", "scheduled", { cursor }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, cursor).toBeInstanceOf(ValidationError);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await v.listJobs("b", "scheduled", { limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      seen.push(...page.items.map((j) => j.id));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seen).toEqual(scheduledB);
    await queue.close();
  });

  it("is refused by the operator's queue jobs with a usage exit code", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taquba-cursor-"));
    try {
      const queue = await Queue.open(new LocalStore(dir), "ops");
      for (let i = 0; i < 3; i++) await queue.enqueue("work", enc(`w${i}`));
      await queue.close();
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (s: string) => out.push(s), err: (s: string) => err.push(s), color: false };
      const url = pathToFileURL(dir).href;
      const code = await main(["queue", "jobs", url, "work", "--cursor", "!!!", "--name", "ops"], io);
      expect(code, out.join("\n")).toBe(2);
      expect(err.join("\n")).toMatch(/cursor "!!!".*is not a cursor of queue "work"'s pending jobs/);
      expect(out).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
