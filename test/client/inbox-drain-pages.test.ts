/**
 * @module The client inbox drains in pages: a pass lists at most
 * `INBOX_LIST_PAGE` requests at a time and lists on after the last, so an
 * inbox of thousands of requests is never held whole, and each request is
 * still applied once, in order: over a store that ignores the key to start
 * after, a listing that repeats keys (still refused), and an owner
 * SIGKILLed mid-drain whose successor finishes the inbox (triggers of a
 * schedule, where a request applied twice would start a second run).
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, StoreRequestError } from "taquba";
import { INBOX_LIST_PAGE } from "../../runtime/client/inbox-server.js";
import { CarelessListings } from "../support/careless-listings.js";
import { startScript } from "../support/child-script.js";
import { DisorderedListings } from "../support/disordered-listings.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { openOwner } from "./fixtures/app.js";
import { ANSWERS, answered, expectOneRunPerTrigger, names, PagedInbox, REQUESTS, servedInbox, writeSignals, writeTriggers } from "./fixtures/inbox-pages.js";

const OWNER = fileURLToPath(new URL("./fixtures/owner-process.ts", import.meta.url));
const tempDir = useTempDirs("taquba-inbox-pages-");
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("the client inbox drains in pages", () => {
  it("applies thousands of requests once each, in order, listing at most a page of them at a time", async () => {
    const { store, served: watched, clock, inbox } = await servedInbox((s) => new PagedInbox(s), closers);
    const n = 2 * INBOX_LIST_PAGE + 500;
    const written = await writeSignals(store, clock, n);
    watched.reset();
    expect(await inbox.drain()).toBe(n);
    expect(inbox.stats.applied).toBe(n);
    expect(watched.read).toEqual(written);
    expect(Math.max(...watched.listed)).toBe(INBOX_LIST_PAGE);
    // Three listings: 1000, 1000 and 500 requests.
    expect(watched.listed).toHaveLength(3);
    expect(await names(store, REQUESTS)).toEqual([]);
    expect(await names(store, ANSWERS)).toEqual(written);
  }, 120_000);

  it("applies each once over a store that ignores the key to start after, and still refuses one that lists a key twice", async () => {
    const careless = await servedInbox((s) => new CarelessListings(s, "startAfter"), closers);
    const n = INBOX_LIST_PAGE + 200;
    const written = await writeSignals(careless.store, careless.clock, n);
    expect(await careless.inbox.drain()).toBe(n);
    expect(careless.inbox.stats.applied).toBe(n);
    expect(await names(careless.store, ANSWERS)).toEqual(written);

    const twice = await servedInbox((s) => new DisorderedListings(s, "each key twice"), closers);
    const kept = await writeSignals(twice.store, twice.clock, n);
    const err = await twice.inbox.drain().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as Error).message).toMatch(/the store given to serveClients listed .* out of key order or a second time/);
    expect(twice.inbox.stats.applied).toBe(0);
    expect(await names(twice.store, REQUESTS)).toEqual(kept);
  }, 120_000);

  // A child owner over a directory store, killed part way through 1,200 requests, then an owner in this
  // process: tens of seconds at load 40 on two cores (starting the child alone is several).
  it(
    "an owner SIGKILLed mid-drain leaves its successor every request to apply once: no trigger starts a second run",
    { timeout: loadLimitTimeout(120_000) },
    () =>
      withinLoadLimit(120_000, async () => {
        const dir = await tempDir();
        const store = new LocalStore(dir);
        const schedules = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"];
        const setup = await openOwner(store, { flushIntervalMs: 0 });
        // Once a year: no tick falls in the test.
        for (const id of schedules) await setup.runtime.schedules.upsert({ id, cron: "0 0 1 1 *", run: { input: new TextEncoder().encode("{}") } });
        await setup.stop();
        const written = await writeTriggers(store, schedules, INBOX_LIST_PAGE + 200);
        const child = startScript(OWNER, [pathToFileURL(dir).href, "50"]);
        await child.waitFor((l) => l.includes("ready"));
        // Killed once it has answered part of the first page.
        // Requests are applied in order (the first test checks it): the 200th answered is 200 answered.
        await until("the first owner answered 200 requests", () => answered(store, written[199]!), 100_000);
        expect((await child.kill()).signal).toBe("SIGKILL");
        const left = await names(store, REQUESTS);
        expect(left.length).toBeGreaterThan(0);

        const next = await openOwner(store, { listIntervalMs: 3_600_000 });
        closers.push(() => next.stop());
        await expectOneRunPerTrigger(store, next, written);
      }),
  );
});
