/**
 * @module Reading what crash writer processes printed and what their store
 * was left holding: the ids they reported durable (`D <id>` lines), their
 * last counters (`<letter> <n>` lines), and segments the newest manifest
 * lists that the store lost.
 */
import type { ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";

/** The batch ids a writer reported durable. */
export const durableIds = (lines: readonly string[]): string[] => lines.filter((l) => l.startsWith("D ")).map((l) => l.slice(2));

/** The highest `<letter> <n>` count a writer printed. */
export const lastCount = (lines: readonly string[], letter: string): number =>
  lines.reduce((n, l) => (l.startsWith(`${letter} `) ? Math.max(n, Number(l.slice(2))) : n), 0);

/** Segment objects the newest manifest lists that the store does not hold (none when there is no manifest). */
export async function missingListedSegments(store: ObjectStore): Promise<string[]> {
  let newest: { key: string; id: number } | undefined;
  for await (const o of store.list("manifest/")) {
    const id = parseNumberedKey("", "manifest", o.key);
    if (id !== undefined && (newest === undefined || id > newest.id)) newest = { key: o.key, id };
  }
  if (newest === undefined) return [];
  const got = await store.get(newest.key);
  const held = new Set<string>();
  for await (const o of store.list("seg/")) held.add(o.key);
  return decodeManifest(newest.key, got!.body, newest.id)
    .segments.map((s) => s.name)
    .filter((name) => !held.has(name));
}
