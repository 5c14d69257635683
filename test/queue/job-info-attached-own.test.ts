/**
 * @module The bytes a job view reports as `attached` are the reader's own:
 * changing them changes neither what the next read reports nor what is
 * stored, and they keep no shared buffer of the engine alive (a record not
 * yet paged sits in one of its 64 KiB chunks).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";

describe("JobInfo.attached", () => {
  it("is a copy of its own: a reader changing it changes nothing read or stored after", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q");
    const { jobId } = await queue.enqueue("jobs", new Uint8Array(200).fill(7), { runAt: Date.now() + 3_600_000 });
    expect(await queue.wakeScheduled("jobs", jobId, new Uint8Array(300).fill(5))).toBe(true);
    const info = (await queue.view().job(jobId))!;
    expect(info.attached).toEqual(new Uint8Array(300).fill(5));
    expect(info.attached!.buffer.byteLength).toBe(300);
    info.attached!.fill(0);
    expect((await queue.view().job(jobId))!.attached).toEqual(new Uint8Array(300).fill(5));
    const claimed = (await queue.claim("jobs"))!;
    expect(claimed.attached).toEqual(new Uint8Array(300).fill(5));
    await queue.close();
    const reopened = await Queue.open(store, "q");
    expect((await reopened.view().job(jobId))!.attached).toEqual(new Uint8Array(300).fill(5));
    await reopened.close();
  });
});
