/** @module What a store holds, read back by tests: keys under a prefix, the epochs of its manifests, and segments a manifest lists that are gone. */
import type { ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";

/** Every key under `prefix`, in the store's listing order. */
export async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}

/** The segments the newest manifest lists that the store no longer holds. */
export async function missingListed(store: ObjectStore): Promise<string[]> {
  const key = (await keysUnder(store, "manifest/")).at(-1)!;
  const manifest = decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!);
  const held = new Set(await keysUnder(store, "seg/"));
  return manifest.segments.map((s) => s.name).filter((name) => !held.has(name));
}

/** The writer epochs of the manifests `store` holds. */
export async function manifestEpochs(store: ObjectStore): Promise<Set<number>> {
  const out = new Set<number>();
  for (const key of await keysUnder(store, "manifest/")) {
    const got = await store.get(key);
    if (got !== null) out.add(decodeManifest(key, got.body, parseNumberedKey("", "manifest", key)!).epoch);
  }
  return out;
}
