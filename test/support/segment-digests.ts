/** @module Digests of a store's segment objects, for tests comparing what two engines wrote (comparing megabytes bytewise in an assertion is slow). */
import { createHash } from "node:crypto";
import type { ObjectStore } from "taquba";

/** SHA-256 of each segment object of `store`, in key order. */
export async function segmentDigests(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("seg/"))
    out.push(
      createHash("sha256")
        .update((await store.get(o.key))!.body)
        .digest("hex"),
    );
  return out;
}
