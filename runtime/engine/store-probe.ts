/**
 * @module The check a writer makes of its store before trusting it: that a
 * create-if-absent put really refuses to overwrite. Fencing, the WAL and
 * manifests all rest on it; a store that ignores `If-None-Match: *` (plain
 * s3rver, some older S3-compatible servers) would let two writers both
 * acknowledge commits and overwrite each other's objects.
 */
import { randomBytes } from "node:crypto";
import { PreconditionFailedError, UnsupportedStoreError } from "../errors.js";
import type { StoreContext } from "./recovery.js";
import { withRetries } from "./retry.js";
import { createOnce } from "./store-ops.js";
import { openWrite } from "./store-refusal.js";

/** Where probe objects live under the engine prefix; nothing else reads this folder. */
export const PROBE_DIR = "probe/";

/**
 * Creates a fresh probe object, then tries to create it again with different
 * bytes: the second put must fail with `PreconditionFailedError` (HTTP 412 or
 * 409). Deletes the probe either way. Throws `UnsupportedStoreError` when the
 * store accepted the second put.
 */
export async function probeConditionalCreate(ctx: StoreContext): Promise<void> {
  const key = `${ctx.prefix}${PROBE_DIR}${Date.now().toString(36)}-${randomBytes(8).toString("hex")}`;
  // The open's first write: a store refusing this process's writes (an owner's lease guard) is said so here.
  const first = await openWrite(() => createOnce(ctx.store, key, new TextEncoder().encode("first"), ctx.retry));
  // A random name already taken (never seen in practice): leave it, probe on the next open.
  if (!first.created) return;
  let overwritten = false;
  try {
    try {
      await openWrite(() => withRetries(ctx.retry, "put", key, () => ctx.store.put(key, new TextEncoder().encode("second"), { ifNoneMatch: "*" })));
      overwritten = true;
    } catch (err) {
      if (!(err instanceof PreconditionFailedError)) throw err;
    }
  } finally {
    await withRetries(ctx.retry, "delete", key, () => ctx.store.delete(key)).catch(() => undefined);
  }
  if (overwritten) {
    throw new UnsupportedStoreError(
      "conditional create (If-None-Match: *)",
      `a put with If-None-Match: * of the existing object "${key}" succeeded instead of failing with 412 Precondition Failed`,
    );
  }
}
