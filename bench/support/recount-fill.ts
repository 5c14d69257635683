/**
 * @module The queue the stats recount benches count: `pending` pending
 * and `claimed` claimed jobs on "mail", and `scheduled` scheduled jobs on
 * each of "mail" and "other" (scheduled entries sort in global due order,
 * so a recount of "mail" reads past "other"'s too).
 */
import type { Queue } from "../../runtime/index.js";

export interface RecountFill {
  readonly pending: number;
  readonly scheduled: number;
  readonly claimed: number;
}

/** Fills `queue` as the module says, 500 jobs a batch. */
export async function fillForRecount(queue: Queue, fill: RecountFill): Promise<void> {
  const payload = new Uint8Array(16);
  const now = Date.now();
  const enqueue = async (name: string, n: number, runAt?: number) => {
    for (let i = 0; i < n; i += 500) {
      const items = Array.from({ length: Math.min(500, n - i) }, () => ({ queueName: name, payload, opts: runAt === undefined ? {} : { runAt } }));
      await queue.enqueueBatch(items);
    }
  };
  await enqueue("mail", fill.pending + fill.claimed);
  await enqueue("mail", fill.scheduled, now + 3_600_000);
  await enqueue("other", fill.scheduled, now + 3_600_000);
  for (let i = 0; i < fill.claimed; i += 500) await queue.claimBatch("mail", Math.min(500, fill.claimed - i));
}
