/**
 * @module Opens overtaken while they walk the log, on a directory and over
 * the S3 protocol (s3rver on loopback), each driven in one order by hooks
 * on the store's listings: an open overtaken by a newer open that is
 * itself overtaken by a third (both older opens fenced, the newest
 * writer's commits kept: unfixed, an open planted its fence past a newer
 * writer's and acknowledged commits every later open skipped as an older
 * epoch's), an open beside a live owner whose commit and checkpoint
 * segment land between the open's segment listing and its walk (the
 * commit taken, the store not refused as corrupt, as it once was), and an
 * open whose first load a live owner overtakes with commits, checkpoints
 * and the garbage collection that deletes the log the open had started to
 * read (the open goes on from the owner's newest manifest and keeps every
 * commit the owner acknowledged).
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, S3Store, WriteBatch, type ObjectStore } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { ClaimNoted, ListHook } from "../support/open-hooks.js";
import { keysUnder, missingListed } from "../support/store-keys.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-open-overtaken-");
const server = useS3Server();
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

/** The open's outcome: the error it failed with, or undefined when it opened (then it commits, so a second writer's loss would show). */
async function openOutcome(store: ObjectStore, name: string): Promise<unknown> {
  return Engine.open(store, MANUAL).then(
    async (e) => {
      await e.commit(new WriteBatch().put(`lost/${name}`, enc("x"))).catch(() => {});
      await e.close().catch(() => {});
      return undefined;
    },
    (e: unknown) => e,
  );
}

let stores = 0;
const backends: [string, () => Promise<() => ObjectStore>][] = [
  [
    "a directory",
    async () => {
      const dir = await tempDir();
      return () => new LocalStore(dir);
    },
  ],
  [
    "s3rver",
    async () => {
      const prefix = `overtaken-${++stores}-${Date.now()}`;
      return () => new S3Store({ bucket: server.bucket, prefix, clientConfig: server.clientConfig });
    },
  ],
];

describe("an open overtaken while it walks the log", () => {
  for (const [name, backend] of backends) {
    it(`twice in a row: the open and the one that overtook it are both fenced, the third writer's commits kept (${name})`, { timeout: 60_000 }, async () => {
      const store = await backend();
      const first = await Engine.open(store(), MANUAL);
      await first.commit(new WriteBatch().put("a", enc("1")));
      await first.checkpoint();
      await first.close();
      let third: Engine | undefined;
      let secondOutcome: Promise<unknown> | undefined;
      const secondClaim = new ClaimNoted(store());
      const second = new ListHook(
        secondClaim,
        "wal/",
        () => secondClaim.claimed,
        async () => {
          third = await Engine.open(store(), MANUAL);
          await third.commit(new WriteBatch().put("b", enc("2")));
        },
      );
      const firstClaim = new ClaimNoted(store());
      const opener = new ListHook(
        firstClaim,
        "wal/",
        () => firstClaim.claimed,
        async () => {
          // The newer open is itself overtaken during its own walk; this open waits for both.
          secondOutcome = openOutcome(second, "second");
          await secondOutcome;
        },
      );
      const outcome = await openOutcome(opener, "first");
      expect(opener.fired && second.fired).toBe(true);
      expect(third).toBeDefined();
      const epoch = third!.epoch;
      // Each older open names the newest writer that fenced it, and acknowledged nothing (checked after the reopen).
      const fencedBy = new RegExp(`another writer \\(epoch ${epoch}\\) fenced the store while this one was opening`);
      for (const o of [await secondOutcome, outcome]) {
        expect(o).toBeInstanceOf(FencedError);
        expect((o as Error).message).toMatch(fencedBy);
      }
      await third!.commit(new WriteBatch().put("c", enc("3")));
      await third!.checkpoint();
      await third!.close();
      const again = await Engine.open(store(), MANUAL);
      expect(["a", "b", "c"].map((k) => dec(again.get(k)))).toEqual(["1", "2", "3"]);
      expect([again.has("lost/first"), again.has("lost/second")]).toEqual([false, false]);
      expect(again.epoch).toBe(epoch + 1);
      await again.close();
      expect(await missingListed(store())).toEqual([]);
    });

    it(`a live owner's commit and its checkpoint's segment land between the open's segment listing and its walk: the open takes the commit, not the store for corrupt (${name})`, {
      timeout: 60_000,
    }, async () => {
      const store = await backend();
      const ownerStore = new GatedStore(store());
      const owner = await Engine.open(ownerStore, MANUAL);
      await owner.commit(new WriteBatch().put("a", enc("1")));
      await owner.checkpoint();
      // The owner's next manifest is held: its checkpoint has written its segment, not published it.
      ownerStore.hold = (key) => key.startsWith("manifest/");
      let checkpointing: Promise<unknown> | undefined;
      const opener = new ListHook(
        store(),
        "seg/",
        () => true,
        async () => {
          await owner.commit(new WriteBatch().put("b", enc("2")));
          checkpointing = owner.checkpoint().catch((e: unknown) => e);
          await ownerStore.waitHeld(1);
        },
      );
      const opened = await Engine.open(opener, MANUAL);
      expect(opener.fired).toBe(true);
      expect(["a", "b"].map((k) => dec(opened.get(k)))).toEqual(["1", "2"]);
      ownerStore.release(ownerStore.held[0]!.key);
      expect(await checkpointing).toBeInstanceOf(FencedError);
      await owner.close().catch(() => {});
      await opened.commit(new WriteBatch().put("c", enc("3")));
      await opened.checkpoint();
      await opened.close();
      const again = await Engine.open(store(), MANUAL);
      expect(["a", "b", "c"].map((k) => dec(again.get(k)))).toEqual(["1", "2", "3"]);
      await again.close();
      expect(await missingListed(store())).toEqual([]);
    });

    it(`a live owner commits, checkpoints and collects the log the open began to read: the open keeps every acknowledged commit (${name})`, {
      timeout: 60_000,
    }, async () => {
      const store = await backend();
      const owner = await Engine.open(store(), { ...MANUAL, maxSegmentRuns: 1 });
      await owner.commit(new WriteBatch().put("base", enc("b")));
      await owner.checkpoint();
      for (let i = 0; i < 3; i++) await owner.commit(new WriteBatch().put(`before/${i}`, enc("x")));
      const walBefore = await keysUnder(store(), "wal/");
      const acked: string[] = [];
      // The open's first walk of the log, after it read the manifest and listed the segments: the owner goes on.
      const opener = new ListHook(
        store(),
        "wal/",
        () => true,
        async () => {
          for (let i = 0; i < 4; i++) {
            await owner.commit(new WriteBatch().put(`during/${i}`, enc("y")));
            acked.push(`during/${i}`);
            await owner.checkpoint();
          }
        },
      );
      const opened = await Engine.open(opener, MANUAL);
      expect(opener.fired).toBe(true);
      // The owner's collection deleted log objects the open had been about to read.
      const walAfter = new Set(await keysUnder(store(), "wal/"));
      expect(walBefore.some((k) => !walAfter.has(k))).toBe(true);
      for (const k of ["base", "before/0", "before/1", "before/2", ...acked]) expect(opened.has(k), k).toBe(true);
      // The owner is fenced at its next checkpoint; what it acknowledged before stays.
      await owner.commit(new WriteBatch().put("late", enc("z"))).then(
        () => acked.push("late"),
        () => {},
      );
      expect(
        await owner.checkpoint().then(
          () => undefined,
          (e: unknown) => e,
        ),
      ).toBeInstanceOf(FencedError);
      await owner.close().catch(() => {});
      await opened.commit(new WriteBatch().put("after", enc("w")));
      await opened.checkpoint();
      await opened.close();
      const again = await Engine.open(store(), MANUAL);
      for (const k of ["base", "before/0", "during/3", "after", ...acked]) expect(again.has(k), k).toBe(true);
      await again.close();
      expect(await missingListed(store())).toEqual([]);
    });
  }
});
