/**
 * @module What a reopen says when one of the store's own objects was damaged
 * at rest: a WAL object or a checkpoint segment with a flipped byte, on real
 * files (LocalStore) and through the S3 protocol (s3rver on loopback). The
 * fuzz tests assert the error class; these assert the text a user reads:
 * which object, what kind of object it is, that the store is corrupt, and
 * what to do, not a bare internal key.
 */
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, S3Store, StoreCorruptedError, WriteBatch, type ObjectStore } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";

const server = useS3Server();
const tempDir = useTempDirs("taquba-corrupt-messages-");

const enc = (s: string) => new TextEncoder().encode(s);
const KEYS = 20;

/** Writes KEYS keys; with `checkpoint`, into a segment (no WAL object left to replay), else into WAL objects only. */
async function fill(store: ObjectStore, checkpoint: boolean): Promise<void> {
  const engine = await Engine.open(store, { checkpointWalObjects: 0 });
  for (let i = 0; i < KEYS; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc(`value ${i} `.repeat(20))));
  if (checkpoint) await engine.checkpoint();
  await engine.close();
}

async function keysOf(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out.sort();
}

/** Reopens the store and reads every key: the error it fails with. */
async function reopenError(store: ObjectStore): Promise<StoreCorruptedError> {
  const err = await (async () => {
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    try {
      for (let i = 0; i < KEYS; i++) engine.get(`k/${i}`);
    } finally {
      await engine.close().catch(() => undefined);
    }
  })().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreCorruptedError);
  return err as StoreCorruptedError;
}

/** The file LocalStore keeps `key` in (its folders are encoded key prefixes). */
async function fileOf(dir: string, key: string): Promise<string> {
  const name = key.slice(key.lastIndexOf("/") + 1);
  const files = (await readdir(dir, { recursive: true })) as string[];
  for (const f of files) if (f.endsWith(`/${name}`) && f.startsWith(key.slice(0, 3)) && (await stat(join(dir, f))).isFile()) return join(dir, f);
  throw new Error(`no file holds ${key}`);
}

/** A damage: which byte of the object to flip. */
type Damage = (length: number) => number;
const HEADER: Damage = () => 20;
const TAIL: Damage = (n) => n - 10;

interface Kind {
  readonly name: string;
  readonly prefix: string;
  readonly checkpoint: boolean;
  readonly damage: Damage;
  readonly says: RegExp;
  readonly advice: string;
}

const KINDS: readonly Kind[] = [
  {
    name: "a WAL object",
    prefix: "wal/",
    checkpoint: false,
    damage: HEADER,
    says: /WAL checksum mismatch \(truncated or altered\); it is one of the store's write-ahead log objects, which hold its latest commits, so the store is corrupt/,
    advice: "restore the store from a backup or remove its data; nothing was replayed from this object",
  },
  {
    name: "a segment's index",
    prefix: "seg/",
    checkpoint: true,
    damage: TAIL,
    says: /segment index checksum mismatch; it is one of the store's checkpoint segments, so the store is corrupt/,
    advice: "restore the store from a backup or remove its data: the keys this segment holds cannot be read until then",
  },
  {
    name: "a segment's first block",
    prefix: "seg/",
    checkpoint: true,
    damage: HEADER,
    says: /segment block 0 checksum mismatch; it is one of the store's checkpoint segments, so the store is corrupt/,
    advice: "restore the store from a backup or remove its data: the keys this segment holds cannot be read until then",
  },
];

function expectSaysWhatIsWrong(err: StoreCorruptedError, key: string, kind: Kind): void {
  expect(err.code).toBe("STORE_CORRUPTED");
  expect(err.objectKey).toBe(key);
  expect(err.message).toContain(`object "${key}" is corrupted (`);
  expect(err.message).toMatch(kind.says);
  expect(err.message.endsWith(kind.advice)).toBe(true);
}

describe("a damaged store object is reported in the user's terms", () => {
  for (const kind of KINDS) {
    it(`LocalStore: ${kind.name} with a flipped byte, in the real file`, async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      await fill(store, kind.checkpoint);
      const key = (await keysOf(store, kind.prefix))[0]!;
      const file = await fileOf(dir, key);
      const bytes = await readFile(file);
      const at = kind.damage(bytes.length);
      bytes[at] = bytes[at]! ^ 0xff;
      await writeFile(file, bytes);
      expectSaysWhatIsWrong(await reopenError(store), key, kind);
      // Reported every time, never skipped: the damaged object is still there and a second open says the same.
      expectSaysWhatIsWrong(await reopenError(store), key, kind);
    });

    it(`S3Store: ${kind.name} with a flipped byte, written back through the S3 protocol`, async () => {
      const prefix = `corrupt-${kind.prefix.slice(0, 3)}-${kind.damage === HEADER ? "head" : "tail"}`;
      const store = new S3Store({ bucket: server.bucket, prefix, clientConfig: server.clientConfig });
      await fill(store, kind.checkpoint);
      const key = (await keysOf(store, kind.prefix))[0]!;
      const got = await store.get(key);
      const bytes = Uint8Array.from(got!.body);
      const at = kind.damage(bytes.length);
      bytes[at] = bytes[at]! ^ 0xff;
      await store.put(key, bytes);
      expectSaysWhatIsWrong(await reopenError(store), key, kind);
    });
  }
});

describe("a segment cut short or gone is reported as a checkpoint segment", () => {
  const SEGMENT_ADVICE = "restore the store from a backup or remove its data: the keys this segment holds cannot be read until then";

  it("LocalStore: a segment file cut short", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await fill(store, true);
    const key = (await keysOf(store, "seg/"))[0]!;
    const file = await fileOf(dir, key);
    const bytes = await readFile(file);
    await writeFile(file, bytes.subarray(0, bytes.length - 100));
    const err = await reopenError(store);
    expect(err.objectKey).toBe(key);
    expect(err.message).toMatch(/bytes.*; it is one of the store's checkpoint segments, so the store is corrupt/);
    expect(err.message.endsWith(SEGMENT_ADVICE)).toBe(true);
  });

  it("LocalStore: a segment the newest manifest lists, deleted", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await fill(store, true);
    const key = (await keysOf(store, "seg/"))[0]!;
    await store.delete(key);
    const err = await reopenError(store);
    expect(err.objectKey).toBe(key);
    expect(err.message).toMatch(
      /it is missing, but manifest \d+ \(the newest\) lists it; it is one of the store's checkpoint segments, so the store is corrupt/,
    );
    expect(err.message.endsWith(SEGMENT_ADVICE)).toBe(true);
  });
});
