/**
 * @module What the key runs hold, key by key: per key family (a key up to
 * its first "/"), the entries, their key lengths, the bytes each shares with
 * the key before it in its run, and the bytes each entry takes in the run
 * (key and value). Walks every run not yet collected, live entries or not,
 * so it is run once at the end of a fill, after a full GC.
 */
import { BLOCK_ENTRIES, type KeyRun, RunCursor } from "../../runtime/engine/key-run.js";
import { keyRunTally, trackedKeyRuns } from "../../runtime/engine/key-run-tally.js";
import { RunLiveness } from "../../runtime/engine/run-liveness.js";

const MB = 1024 * 1024;

interface Family {
  entries: number;
  keyBytes: number;
  sharedBytes: number;
  entryBytes: number;
  valueBytes: number;
}

/** One line of sums over the runs not yet collected. */
export function keyRunLine(): string {
  const t = keyRunTally();
  const f = (b: number) => (b / MB).toFixed(1);
  return `key runs ${t.runs} (largest ${t.largestEntries.toLocaleString("en-US")} entries), ${t.entries.toLocaleString("en-US")} entries, bytes ${f(t.bytes)} MB (resizable ${t.resizableRuns}: ${f(t.resizableBytes)} MB, reserving ${f(t.reservedBytes)} MB), offsets and filters ${f(t.indexBytes)} MB (filters ${f(t.filterBytes)} MB), ${(t.bytes / Math.max(1, t.entries)).toFixed(1)} + ${(t.indexBytes / Math.max(1, t.entries)).toFixed(1)} B per entry`;
}

/** Lines of per-family figures over every run not yet collected. */
export function keyRunFamilies(): string[] {
  const families = new Map<string, Family>();
  let prev = Buffer.alloc(256);
  let prevLen = 0;
  for (const run of trackedKeyRuns<KeyRun>()) {
    const c = new RunCursor(run, new RunLiveness(run.count, BLOCK_ENTRIES));
    prevLen = 0;
    let entryStart = 0;
    let last: Family | undefined;
    while (c.advance()) {
      const key = c.keyBuf;
      const len = c.keyLen;
      let shared = 0;
      while (shared < Math.min(len, prevLen) && key[shared] === prev[shared]) shared++;
      const slash = key.indexOf(0x2f);
      const name = key.toString("latin1", 0, slash >= 0 && slash < len ? slash + 1 : Math.min(len, 4));
      let fam = families.get(name);
      if (fam === undefined) families.set(name, (fam = { entries: 0, keyBytes: 0, sharedBytes: 0, entryBytes: 0, valueBytes: 0 }));
      fam.entries++;
      fam.keyBytes += len;
      fam.sharedBytes += shared;
      // An entry's bytes: from the previous entry's end (the cursor's value start less its key) to its own value's end.
      if (prev.length < len) prev = Buffer.alloc(len * 2);
      key.copy(prev, 0, 0, len);
      prevLen = len;
      const tagAndLen = run.bytes[c.valueAt + 1]! < 0x80 ? 2 : 3;
      const tag = run.bytes[c.valueAt]!;
      const valueBytes = tag === 2 ? tagAndLen + run.bytes[c.valueAt + 1]! : tagAndLen;
      fam.valueBytes += valueBytes;
      if (last !== undefined) last.entryBytes += c.valueAt - entryStart;
      entryStart = c.valueAt;
      last = fam;
    }
    if (last !== undefined) last.entryBytes += run.bytes.byteLength - entryStart;
  }
  return [...families].map(
    ([name, f]) =>
      `family ${JSON.stringify(name)}: ${f.entries.toLocaleString("en-US")} entries, key ${(f.keyBytes / f.entries).toFixed(1)} B, shared with the key before ${(f.sharedBytes / f.entries).toFixed(1)} B, value ${(f.valueBytes / f.entries).toFixed(1)} B, in the run ${(f.entryBytes / f.entries).toFixed(1)} B per entry`,
  );
}
