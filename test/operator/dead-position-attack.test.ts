/**
 * @module The operator's dead-letter listing continues after a position a
 * full page printed (`QUEUE/JOB_ID`). A position made up or cut (no queue,
 * no id, a queue name no queue may have) was read as a place in the
 * listing, and `dead list` printed "no dead letters" or the first page
 * again. Each must be refused with a usage exit code, and a printed
 * position still continues the listing.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue } from "taquba";
import { main } from "../../operator/cli/main.js";
import { enc } from "../queue/helpers.js";

describe("a dead-letter position dead list did not print", () => {
  it("is refused with a usage exit code, and a printed one continues the listing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "taquba-dead-position-"));
    try {
      const queue = await Queue.open(new LocalStore(dir), "ops", { logger: { error: () => undefined, warn: () => undefined } });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        await queue.enqueue("work", enc(`w${i}`));
        const job = (await queue.claim("work"))!;
        await queue.deadLetter(job, "refused by the test");
        ids.push(job.id);
      }
      await queue.close();
      ids.sort();
      const url = pathToFileURL(dir).href;
      const cli = async (...args: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main(["dead", "list", url, ...args, "--name", "ops"], { out: (s) => out.push(s), err: (s) => err.push(s), color: false });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };
      for (const position of ["~~~", "work", "work/", `/${ids[0]}`, `wo rk/${ids[0]}`, `work/${ids[0]}/x`]) {
        const r = await cli("--after", position);
        expect(r.code, `${position}: ${r.out}`).toBe(2);
        expect(r.err, position).toContain("is not one a page printed");
      }
      const first = await cli("--limit", "2");
      expect(first.code, first.err).toBe(0);
      const printed = /--after (\S+)/.exec(first.out)![1]!;
      expect(printed).toBe(`work/${ids[1]}`);
      const rest = await cli("--after", printed);
      expect(rest.code, rest.err).toBe(0);
      expect(rest.out).toContain(ids[2]);
      expect(rest.out).not.toContain(ids[0]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
