/**
 * @module Answers nobody read: an owner killed after answering a request and
 * before deleting it answers it again after its restart, and the client may
 * have read and removed only the first answer. The owner removes such
 * answers once they are older than `appliedRetentionMs`, and keeps younger
 * ones (a client may still be about to read them).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, WorkflowRuntime, serveClients } from "taquba";
import { requestIds } from "../../runtime/client/inbox-layout.js";
import { appRunner, STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";

const answers = `${STORE_NAME}/inbox/${STEP_QUEUE}/answers/`;

async function answerNames(store: MemoryStore): Promise<string[]> {
  const names: string[] = [];
  for await (const o of store.list(answers)) if (!o.key.endsWith("/~keep")) names.push(o.key.slice(answers.length));
  return names;
}

describe("answers nobody read", () => {
  it("are removed once older than the retention, and younger ones are kept", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const queue = await Queue.open(store, STORE_NAME, { clock, flushIntervalMs: 0 });
    const runtime = WorkflowRuntime.builder(queue, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    const inbox = serveClients(queue, runtime, { store, appliedRetentionMs: 60_000 });
    try {
      const ids = requestIds();
      const orphans = [ids(clock.now()), ids(clock.now()), ids(clock.now())];
      for (const id of orphans) await store.put(`${answers}${id}`, new Uint8Array([1]));

      // Within the retention: kept.
      clock.advance(59_000);
      const young = ids(clock.now());
      await store.put(`${answers}${young}`, new Uint8Array([1]));
      await inbox.drain();
      expect(await answerNames(store)).toEqual([...orphans, young]);

      // Past it (and past the sweep's pause of a tenth of the retention): the three old ones
      // go, the young one stays until its own time.
      clock.advance(7_000);
      await inbox.drain();
      expect(await answerNames(store)).toEqual([young]);
      clock.advance(60_000);
      await inbox.drain();
      expect(await answerNames(store)).toEqual([]);
    } finally {
      await inbox.stop();
      await queue.close();
    }
  });
});
