/**
 * @module A dead-letter listing's `after` that is no job id: a number, an
 * object, null, empty text, an id with a character no id holds. Each was
 * joined to the listing's prefix as text and answered a page (none, read as
 * "no more dead jobs", or every one again). Each must be refused with a
 * ValidationError, over the queue's view and the operator's dead list,
 * while ids a page lists still page every dead job once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue, ValidationError } from "taquba";
import { main } from "../../operator/cli/main.js";
import { enc, openQueue } from "./helpers.js";

/** The dead letters are the test's own doing: not logged. */
const QUIET = { error: () => undefined, warn: () => undefined };

async function deadLettered(queue: Queue, name: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    await queue.enqueue(name, enc(`${name}${i}`));
    const job = (await queue.claim(name))!;
    await queue.deadLetter(job, "refused by the test");
    ids.push(job.id);
  }
  return ids.sort();
}

describe("a dead-letter listing's after that is no job id", () => {
  it("is refused, and the listed ids page every dead job once", async () => {
    const { queue } = await openQueue({ logger: QUIET });
    const ids = await deadLettered(queue, "a", 4);
    const v = queue.view();
    for (const after of [5, {}, null, "", "a/b", "x".repeat(200), "\ud800"]) {
      const err = await v.deadJobs("a", { after: after as string }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(after)).toBeInstanceOf(ValidationError);
      expect((err as Error).message, JSON.stringify(after)).toMatch(/deadJobs' after/);
    }
    const seen: string[] = [];
    for (let page = await v.deadJobs("a", { limit: 3 }); page.length > 0; page = await v.deadJobs("a", { limit: 3, after: seen.at(-1)! })) {
      seen.push(...page.map((j) => j.id));
    }
    expect(seen).toEqual(ids);
    await queue.close();
  });

  it("is refused by the operator's dead list with a usage exit code", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taquba-dead-after-"));
    try {
      const queue = await Queue.open(new LocalStore(dir), "ops", { logger: QUIET });
      await deadLettered(queue, "work", 2);
      await queue.close();
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (s: string) => out.push(s), err: (s: string) => err.push(s), color: false };
      const code = await main(["dead", "list", pathToFileURL(dir).href, "--after", "work/", "--name", "ops"], io);
      expect(code, out.join("\n")).toBe(2);
      expect(err.join("\n")).toMatch(/dead letter position "work\/" is not one a page printed/);
      expect(out).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
