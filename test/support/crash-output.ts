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

/**
 * Where the manifest a killed open's claim put under its name sits, found
 * by its bytes (`claim`, read from the temporary file a kill after the link
 * leaves): "newest" when no manifest is numbered after it, "below" when one
 * is or when it is gone. A claim lands below when the live writer moved
 * more than three manifests on while the open read its base, and deleted
 * the number the claim took; nothing reads a claim there, so it fences no
 * one (a claim above the live writer's newest is never deleted by it).
 */
export async function claimPlace(store: ObjectStore, claim: Uint8Array): Promise<"newest" | "below"> {
  let newest = -1;
  let claimed = -1;
  for await (const o of store.list("manifest/")) {
    const id = parseNumberedKey("", "manifest", o.key);
    if (id === undefined) continue;
    newest = Math.max(newest, id);
    const got = await store.get(o.key);
    if (got !== null && Buffer.from(got.body).equals(claim)) claimed = id;
  }
  return claimed >= 0 && claimed === newest ? "newest" : "below";
}
