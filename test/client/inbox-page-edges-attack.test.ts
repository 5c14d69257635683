/**
 * @module The client inbox's pages at their edges: an inbox of exactly one
 * page of requests and of one more, each applied once and in order, the
 * pass listing on after the last name and stopping at the first short
 * page; and a store whose listing fails between two pages: the pass
 * rejects with the store's failure, the first page stays applied, and the
 * next pass applies the rest once, none skipped nor answered twice; and
 * an owner SIGKILLed near the end of its first page of one page and one more
 * schedule triggers, whose successor applies every one once.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, StoreRequestError } from "taquba";
import { INBOX_LIST_PAGE } from "../../runtime/client/inbox-server.js";
import { decodeAnswer } from "../../runtime/client/request-codec.js";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { openOwner } from "./fixtures/app.js";
import { ANSWERS, answered, expectOneRunPerTrigger, names, PagedInbox, REQUESTS, servedInbox, writeSignals, writeTriggers } from "./fixtures/inbox-pages.js";

const OWNER = fileURLToPath(new URL("./fixtures/owner-process.ts", import.meta.url));
const tempDir = useTempDirs("taquba-inbox-page-edges-");

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("the client inbox's pages at their edges", () => {
  for (const [n, pages] of [
    [INBOX_LIST_PAGE, [INBOX_LIST_PAGE, 0]],
    [INBOX_LIST_PAGE + 1, [INBOX_LIST_PAGE, 1]],
  ] as const) {
    it(`applies ${n} requests once each, in order, in listings of ${pages.join(" and ")}`, async () => {
      const { store, served: paged, clock, inbox } = await servedInbox((s) => new PagedInbox(s), closers);
      const written = await writeSignals(store, clock, n);
      paged.reset();
      expect(await inbox.drain()).toBe(n);
      expect(paged.read).toEqual(written);
      expect(paged.listed).toEqual(pages);
      expect(await names(store, REQUESTS)).toEqual([]);
      expect(await names(store, ANSWERS)).toEqual(written);
      // A pass over the empty inbox applies nothing again.
      expect(await inbox.drain()).toBe(0);
    }, 120_000);
  }

  for (const n of [INBOX_LIST_PAGE + 1, 2 * INBOX_LIST_PAGE]) {
    it(`with ${n} requests and the listing after the first page failing: the pass rejects, and the next applies the rest once`, async () => {
      const { store, served: paged, clock, inbox } = await servedInbox((s) => new PagedInbox(s), closers);
      const written = await writeSignals(store, clock, n);
      paged.reset();
      paged.failing.add(1);
      const err = await inbox.drain().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreRequestError);
      expect(await names(store, ANSWERS)).toEqual(written.slice(0, INBOX_LIST_PAGE));
      expect(await names(store, REQUESTS)).toEqual(written.slice(INBOX_LIST_PAGE));
      expect(await inbox.drain()).toBe(n - INBOX_LIST_PAGE);
      // Each request read once: none of the first page again, every one of the rest.
      expect(paged.read).toEqual(written);
      expect(await names(store, REQUESTS)).toEqual([]);
      const answered = await names(store, ANSWERS);
      expect(answered).toEqual(written);
      for (const id of answered) expect(decodeAnswer((await store.get(`${ANSWERS}${id}`))!.body), id).toMatchObject({ ok: true, value: "buffered" });
    }, 120_000);
  }

  // A child owner over a directory store and then an owner in this process: tens of seconds at load 40.
  it(
    "an owner SIGKILLed near the end of its first page of one page and one more triggers leaves its successor each to apply once",
    { timeout: loadLimitTimeout(120_000) },
    () =>
      withinLoadLimit(120_000, async () => {
        const dir = await tempDir();
        const store = new LocalStore(dir);
        const schedules = ["s0", "s1", "s2", "s3"];
        const setup = await openOwner(store, { flushIntervalMs: 0 });
        // Once a year: no tick falls in the test.
        for (const id of schedules) await setup.runtime.schedules.upsert({ id, cron: "0 0 1 1 *", run: { input: new TextEncoder().encode("{}") } });
        await setup.stop();
        const written = await writeTriggers(store, schedules, INBOX_LIST_PAGE + 1);
        const child = startScript(OWNER, [pathToFileURL(dir).href, "50"]);
        await child.waitFor((l) => l.includes("ready"));
        // Killed near its first page's end (where exactly depends on the load): the last of it answered or not, the next page listed or not.
        await until(
          "the first owner answered nine tenths of its first page",
          // Requests are applied in order (the paging tests check it): that one answered is that many answered.
          () => answered(store, written[INBOX_LIST_PAGE - 101]!),
          100_000,
        );
        expect((await child.kill()).signal).toBe("SIGKILL");

        const next = await openOwner(store, { listIntervalMs: 3_600_000 });
        closers.push(() => next.stop());
        await expectOneRunPerTrigger(store, next, written);
      }),
  );
});
