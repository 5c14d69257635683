/**
 * @module LocalStore file names stay distinct on case-folding and Windows
 * file systems: a simulated folding file system (lower/upper case, Unicode
 * normalisation) over random keys and over a real store's directory.
 */
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { decodeSegment, encodeSegment } from "../../runtime/store/file-names.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { HEAVY_TEST_MS } from "../support/load.js";

/** How macOS and Windows compare names by default: case and normalisation folded. */
const folds: ReadonlyArray<(name: string) => string> = [
  (n) => n.toLowerCase(),
  (n) => n.toUpperCase(),
  (n) => n.normalize("NFD").toLowerCase(),
  (n) => n.normalize("NFC").toUpperCase(),
];
const tricky = fc
  .string({ unit: fc.constantFrom(...'aAbBzZ0%._- :<>|?*"é\u0065\u0301ÉßİıK\u212a'.split("")), maxLength: 8 })
  .filter((s) => s !== "" && !s.includes("/"));
const tempDir = useTempDirs("taquba-file-names-");

describe("LocalStore file names", () => {
  it("distinct segments stay distinct under every fold, and decode back", { timeout: HEAVY_TEST_MS }, () => {
    fc.assert(
      fc.property(fc.uniqueArray(tricky, { minLength: 2, maxLength: 12 }), (segments) => {
        for (const fold of folds) {
          const seen = new Map<string, string>();
          for (const s of segments) {
            const name = encodeSegment(s);
            expect(decodeSegment(name)).toBe(s);
            const other = seen.get(fold(name));
            expect(other === undefined, `${JSON.stringify(s)} and ${JSON.stringify(other)} share ${fold(name)}`).toBe(true);
            seen.set(fold(name), s);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it.each(["con", "CON", "lpt1.txt", "nul", "a.", "a ", "x:y", "a<b>", 'q"', "p|q", "w?", "s*"])("%s becomes a name Windows accepts", (segment) => {
    const name = encodeSegment(segment);
    expect(name).toMatch(/^[a-z0-9_.%A-F-]+$/);
    expect(name).not.toMatch(/\.$/);
    expect(name.split(".")[0]!.toLowerCase()).not.toMatch(/^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/);
    expect(decodeSegment(name)).toBe(segment);
  });

  it("a segment that starts with a byte order mark (U+FEFF) decodes back whole, and a real store lists its object and the keys under it", async () => {
    for (const segment of ["\uFEFF", "\uFEFFbom", "\uFEFF\uFEFF"]) expect(decodeSegment(encodeSegment(segment))).toBe(segment);
    const store = new LocalStore(await tempDir());
    const keys = ["bom/\uFEFF", "bom/\uFEFFjob", "bom/\uFEFFdir/inner", "bom/plain"];
    for (const key of keys) await store.put(key, new TextEncoder().encode(key));
    const listed: string[] = [];
    for await (const o of store.list("bom/")) listed.push(o.key);
    expect(listed).toEqual([...keys].sort(compareKeys));
    const under: string[] = [];
    for await (const o of store.list("bom/\uFEFFdir/")) under.push(o.key);
    expect(under).toEqual(["bom/\uFEFFdir/inner"]);
  });

  it("refuses names that are not the canonical spelling of a segment", () => {
    for (const stray of ["%tmp.1.2", "%41", "%4f", "Order", "a b", "%C3"]) {
      const back = decodeSegment(stray);
      if (back !== null) expect(encodeSegment(back)).toBe(stray);
    }
    expect(decodeSegment("%4f")).toBeNull();
    expect(decodeSegment("Order")).toBeNull();
  });

  it("a name of plain characters decodes to itself exactly when it is the canonical spelling of that segment", () => {
    const plain = fc.string({ unit: fc.constantFrom(..."abclnoprtux019._-".split("")), minLength: 1, maxLength: 8 });
    const named = fc.oneof(
      plain,
      fc.tuple(fc.constantFrom("con", "lpt1", "nul", "aux", "com9", "prn"), plain).map(([d, rest]) => d + rest),
    );
    fc.assert(
      fc.property(named, (name) => {
        expect(decodeSegment(name)).toBe(encodeSegment(name) === name ? name : null);
      }),
      { numRuns: 2000 },
    );
    for (const name of ["con", "con.txt", "lpt1", "a.", "nul.", "console", "lpt10", "00000000000000000042", ".", ".."]) {
      expect(decodeSegment(name), name).toBe(encodeSegment(name) === name ? name : null);
    }
  });

  it("a real store keeps Order-1 and order-1 apart under a simulated folding file system, and lists in key order", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const keys = ["runs/Order-1/memo", "runs/order-1/memo", "runs/ORDER-1/memo", "runs/caf\u00e9/x", "runs/cafe\u0301/x", "a:b", "A:B", "con", "Con."];
    for (const k of keys) await store.put(k, new TextEncoder().encode(k));
    // Every path on disk, as a case-and-normalisation-folding file system would see it.
    const walk = async (d: string, rel: string): Promise<string[]> =>
      (await readdir(d, { withFileTypes: true }))
        .flatMap((e) => [`${rel}/${e.name}`])
        .concat(
          ...(await Promise.all(
            (await readdir(d, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => walk(join(d, e.name), `${rel}/${e.name}`)),
          )),
        );
    const files = (await walk(dir, "")).filter((p) => !p.endsWith("%2F"));
    expect(files).toHaveLength(keys.length);
    for (const fold of folds) expect(new Set(files.map(fold)).size, "collision under folding").toBe(keys.length);
    for (const k of keys) expect(new TextDecoder().decode((await store.get(k))!.body)).toBe(k);
    const listed: string[] = [];
    for await (const o of store.list("")) listed.push(o.key);
    expect(listed).toEqual([...keys].sort(compareKeys));
  });

  it("a directory from the layout before escaping is refused with a clear error, not listed as empty", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "runs%2F"), { recursive: true });
    await writeFile(join(dir, "runs%2F", "Order-1"), "old");
    await writeFile(join(dir, "runs%2F", ".DS_Store"), "os");
    const store = new LocalStore(dir);
    const listing = async () => {
      for await (const o of store.list("runs/")) void o;
    };
    await expect(listing()).rejects.toThrow(/layout before keys were escaped/);
  });
});
