/**
 * @module Where chosen keys live in an engine's store, as lines of text for
 * a failed crash test's message: per manifest the store holds, its runs in
 * order with the segments whose key range covers a key; per segment (listed
 * or not) each entry of a key, a put or a tombstone; and per WAL object each
 * op on one. A key read back that should be gone (a lost delete) is then
 * placed: which run wrote it, which later run or WAL object deleted it, and
 * which manifest listed both. Read only on failure: it reads every object.
 */
import type { ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { readSegmentEntries } from "../../runtime/engine/segment-format.js";
import { decodeWal } from "../../runtime/engine/wal-format.js";

async function listAll(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}

/** The text lines placing each of `keys` in `store` (see the module); an object that cannot be read says why. */
export async function traceKeys(store: ObjectStore, keys: readonly string[]): Promise<string[]> {
  const wanted = new Set(keys);
  const lines: string[] = [`where ${keys.join(", ")} live:`];
  for (const key of await listAll(store, "manifest/")) {
    const id = parseNumberedKey("", "manifest", key);
    const got = id === undefined ? null : await store.get(key);
    if (id === undefined || got === null) continue;
    try {
      const m = decodeManifest(key, got.body, id);
      const runs = new Map<number, string[]>();
      for (const seg of m.segments) {
        const covers = keys.filter((k) => seg.firstKey <= k && k <= seg.lastKey);
        const list = runs.get(seg.run) ?? [];
        list.push(`${seg.name}${covers.length > 0 ? ` covers ${covers.join(" ")}` : ""}`);
        runs.set(seg.run, list);
      }
      const described = [...runs].map(([run, segs]) => `run ${run} [${segs.join("; ")}]`).join(", ");
      lines.push(`manifest ${id} (epoch ${m.epoch}, walNext ${m.walNext}, lastSegment ${m.lastSegment}): ${described}`);
    } catch (err) {
      lines.push(`manifest ${id}: ${(err as Error).message}`);
    }
  }
  for (const key of await listAll(store, "seg/")) {
    const got = await store.get(key);
    if (got === null) continue;
    const found: string[] = [];
    try {
      readSegmentEntries(key, got.body, (buf, keyAt, keyLen, _valueAt, valueLen) => {
        const k = buf.toString("utf8", keyAt, keyAt + keyLen);
        if (wanted.has(k)) found.push(`${valueLen < 0 ? "tombstone" : "put"} ${k}`);
      });
    } catch (err) {
      found.push((err as Error).message);
    }
    if (found.length > 0) lines.push(`${key}: ${found.join(", ")}`);
  }
  for (const key of await listAll(store, "wal/")) {
    const seq = parseNumberedKey("", "wal", key);
    const got = seq === undefined ? null : await store.get(key);
    if (seq === undefined || got === null) continue;
    try {
      const wal = decodeWal(key, got.body, seq);
      if (wal.kind === "fence") continue;
      const ops = wal.batches.flatMap((batch) => batch.filter((op) => wanted.has(op.key)).map((op) => `${op.kind} ${op.key}`));
      if (ops.length > 0) lines.push(`WAL ${seq} (epoch ${wal.epoch}): ${ops.join(", ")}`);
    } catch (err) {
      lines.push(`WAL ${seq}: ${(err as Error).message}`);
    }
  }
  return lines;
}
