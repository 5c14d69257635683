/**
 * @module Stores without conditional create (issue J, item 3). A server that
 * ignores `If-None-Match: *` (plain s3rver here, as some older S3-compatible
 * servers) would let two writers both acknowledge commits over each other's
 * objects; opening a writer on it must refuse with UnsupportedStoreError
 * naming the capability and write nothing. Stores that have it (LocalStore,
 * MemoryStore with faults, s3rver with the check) pass the probe and keep
 * no probe object.
 */
import { describe, expect, it } from "vitest";
import { Engine, Queue, S3Store, UnsupportedStoreError, WriteBatch } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { keysUnder, RETRY, useBackends } from "./backends.js";

describe("an S3-compatible server that ignores If-None-Match", () => {
  const server = useS3Server({ conditionalCreate: false });

  it("is refused when a writer opens, naming the missing capability, and nothing is left behind", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: "engine", clientConfig: server.clientConfig });
    const open = Engine.open(store, { retry: RETRY });
    await expect(open).rejects.toBeInstanceOf(UnsupportedStoreError);
    await expect(open).rejects.toThrow(/does not support conditional create \(If-None-Match: \*\)/);
    expect(await keysUnder(store, "")).toEqual([]);
  });

  it("is refused by Queue.open too, before any job could be acknowledged", async () => {
    const store = new S3Store({ bucket: server.bucket, prefix: "queue", clientConfig: server.clientConfig });
    await expect(Queue.open(store, "orders")).rejects.toBeInstanceOf(UnsupportedStoreError);
    expect(await keysUnder(store, "")).toEqual([]);
  });
});

describe.each(useBackends())("conditional create probe on $name", (backend) => {
  it("passes, leaves no probe object, and a second writer still fences the first", async () => {
    const { store, raw } = await backend.make();
    const first = await Engine.open(store, { retry: RETRY });
    await first.commit(new WriteBatch().put("a", new Uint8Array([1])));
    const second = await Engine.open(store, { retry: RETRY });
    await expect(first.commit(new WriteBatch().put("b", new Uint8Array([2])))).rejects.toThrow(/fenced/);
    expect(second.get("a")).toEqual(new Uint8Array([1]));
    await second.close();
    await first.close();
    expect(await keysUnder(raw, "probe/")).toEqual([]);
  });
});
