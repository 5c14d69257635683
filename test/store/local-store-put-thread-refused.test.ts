/**
 * @module A process where worker threads cannot be started (a permission
 * model, an embedder without them): LocalStore's create-if-absent puts go
 * through the thread pool, the first one included, with no error. The
 * `Worker` constructor is replaced by one that throws, as Node's does then.
 */
import { describe, expect, it, vi } from "vitest";
import { LocalStore } from "taquba";
import { sharedPutThread } from "../../runtime/store/local-put-thread.js";
import { useTempDirs } from "../support/temp-dirs.js";

vi.mock("node:worker_threads", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:worker_threads")>();
  class RefusedWorker {
    constructor() {
      throw Object.assign(new Error("Access to this API has been restricted"), { code: "ERR_ACCESS_DENIED" });
    }
  }
  return { ...real, Worker: RefusedWorker };
});

const tempDir = useTempDirs("taquba-put-thread-refused-");

describe("LocalStore where worker threads are refused", () => {
  it("makes every create-if-absent put through the thread pool, the first included", async () => {
    const store = new LocalStore(await tempDir());
    for (let i = 0; i < 3; i++) await store.put(`wal/${i}`, new Uint8Array([i]), { ifNoneMatch: "*" });
    for (let i = 0; i < 3; i++) expect((await store.get(`wal/${i}`))?.body).toEqual(new Uint8Array([i]));
    expect(sharedPutThread().running).toBe(false);
    expect(sharedPutThread().canTake(1), "not tried again").toBe(false);
  });
});
