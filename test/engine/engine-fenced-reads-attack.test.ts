/**
 * @module A writer whose checkpoint's manifest landed while it was paused,
 * and on which a newer writer opened, reads the manifests after its own to
 * decide whether to take its manifest and segments back. Attacked where
 * that reading is weakest: the newer manifests cannot be read (a failing
 * get, damaged bytes) or vanish between the listing and the read, and the
 * newer writer checkpoints and compacts meanwhile, so its garbage
 * collection deletes the paused writer's manifest and segments in the same
 * window. Whatever the paused writer reads, it must fail with
 * `FencedError` and leave a store whose newest manifest lists only
 * segments it holds, with every commit either writer acknowledged.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, MemoryStore, WriteBatch, type ObjectStore, type StoredObject } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { missingListed } from "../support/store-keys.js";
import { HeldManifestPuts } from "../support/held-manifest-puts.js";

const tempDir = useTempDirs("taquba-fenced-reads-");

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
/** Only explicit checkpoints, so the test decides when each manifest is published. */
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0, retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 } } as const;

/** How the paused writer's reads of manifests after its own answer. */
type ReadMode = "as stored" | "failing" | "damaged" | "vanished";

/**
 * The paused writer's view of the store: its manifest puts, while
 * `holding`, land and then wait for `release()`; once released, its reads
 * of manifests numbered above the one it landed answer as `mode` says.
 */
class PausedWriterStore extends HeldManifestPuts {
  constructor(
    inner: ObjectStore,
    readonly mode: ReadMode,
  ) {
    super(inner);
  }

  override async get(key: string): Promise<StoredObject | null> {
    const landed = this.landed[0];
    const later = landed !== undefined && key.startsWith("manifest/") && key > landed;
    if (!later || this.mode === "as stored") return this.inner.get(key);
    if (this.mode === "failing") throw new Error(`the read of ${key} failed`);
    if (this.mode === "vanished") return null;
    const got = await this.inner.get(key);
    if (got === null) return null;
    const body = got.body.slice();
    const at = body.length >> 1;
    body[at] = body[at]! ^ 0xff;
    return { ...got, body };
  }
}

const memory = async (): Promise<ObjectStore> => new MemoryStore();
const local = async (): Promise<ObjectStore> => new LocalStore(await tempDir());
const modes: ReadMode[] = ["as stored", "failing", "damaged", "vanished"];
/**
 * The newer writer's checkpoints before the paused one goes on, and whether
 * each compacts (its collection then deletes the paused writer's segments
 * and, from the third on, its manifest).
 */
const schedules: [number, boolean][] = [
  [0, false],
  [1, false],
  [4, true],
];

const cases = [
  ...modes.flatMap((mode) => schedules.map(([n, c]) => [`MemoryStore, reads ${mode}, ${n} checkpoints${c ? " compacting" : ""}`, memory, mode, n, c] as const)),
  ...modes.map((mode) => [`LocalStore, reads ${mode}, 4 checkpoints compacting`, local, mode, 4, true] as const),
];

describe("a paused writer whose landed manifest a newer writer opened on, reading the newer manifests", () => {
  it.each(cases)("%s", async (_name, makeStore, mode, checkpoints, compacts) => {
    const inner = await makeStore();
    const paused = new PausedWriterStore(inner, mode);
    const a = await Engine.open(paused, MANUAL);
    await a.commit(new WriteBatch().put("a/1", enc("1")));
    await a.checkpoint();
    await a.commit(new WriteBatch().put("a/2", enc("2")));
    paused.holding = true;
    const outcome = a.checkpoint().then(
      () => "resolved",
      (err: unknown) => err,
    );
    await paused.waitLanded();

    const b = await Engine.open(inner, { ...MANUAL, ...(compacts ? { maxSegmentRuns: 1 } : {}) });
    for (let i = 0; i < checkpoints; i++) {
      await b.commit(new WriteBatch().put(`b/${i}`, enc(`b${i}`)));
      await b.checkpoint();
    }
    paused.release();
    expect(await outcome).toBeInstanceOf(FencedError);
    expect(await missingListed(inner)).toEqual([]);
    await b.commit(new WriteBatch().put("b/last", enc("last")));
    await b.checkpoint();
    await a.close();
    await b.close();

    const reopened = await Engine.open(inner, MANUAL);
    expect(dec(reopened.get("a/1"))).toBe("1");
    expect(dec(reopened.get("a/2"))).toBe("2");
    for (let i = 0; i < checkpoints; i++) expect(dec(reopened.get(`b/${i}`))).toBe(`b${i}`);
    expect(dec(reopened.get("b/last"))).toBe("last");
    await reopened.close();
  });
});
