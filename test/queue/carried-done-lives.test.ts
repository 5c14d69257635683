/**
 * @module Done counts carried by claimed entries across repeated SIGKILLs:
 * a child works chains of acks that claim their follow-ups and is killed
 * mid-chain, again and again; after each life a reopen's stats equal the
 * model its records give (each chain's done jobs counted once), and the
 * next life takes up the chains the recovery requeued.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue } from "taquba";
import type { QueueStats } from "../../runtime/queue/record.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec } from "./helpers.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/chain-until-killed.ts", import.meta.url));
const tempDir = useTempDirs("taquba-carried-lives-");
const CHAINS = 6;
// Long enough that no chain ends within the lives: every kill leaves counts carried mid-chain.
const LENGTH = 100_000;
const LIVES = 4;

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

/**
 * Opens the queue as the next process would (its recovery requeues the
 * killed life's claims) and checks its stats against the model its records
 * give: a chain whose job "<c>:<i>" is left did i jobs. The claims taken to
 * read the jobs are given back before the close. Returns the done count.
 */
async function reopenAndCheck(dir: string, life: number): Promise<number> {
  const q = await Queue.open(new LocalStore(dir), "crash", { flushIntervalMs: 0 });
  try {
    const recovered = await q.view().stats("chain");
    const jobs = await q.claimBatch("chain", CHAINS + 1);
    const left = new Map<number, number>();
    for (const job of jobs) {
      const [c, i] = dec(job.payload).split(":").map(Number) as [number, number];
      expect(left.has(c), `after life ${life}, chain ${c} has one job left`).toBe(false);
      left.set(c, i);
    }
    expect(left.size, `after life ${life}, every chain has a job left`).toBe(CHAINS);
    let done = 0;
    for (const i of left.values()) done += i;
    expect(recovered, `stats after life ${life}`).toEqual(stats({ pending: CHAINS, done }));
    for (const job of jobs) q.releaseClaim(job);
    await q.flush();
    expect(await q.view().stats("chain"), `stats after life ${life}, its claims given back`).toEqual(stats({ pending: CHAINS, done }));
    return done;
  } finally {
    await q.close();
  }
}

describe("done counts carried by claimed entries across repeated kills", () => {
  it(
    "a child working chains, killed with SIGKILL life after life: each reopen's stats equal what the records say was done",
    {
      timeout: loadLimitTimeout(120_000),
    },
    () =>
      withinLoadLimit(120_000, async () => {
        const dir = await tempDir();
        let acked = 0;
        let lastDone = 0;
        for (let life = 1; life <= LIVES; life++) {
          const child = startScript(FIXTURE, [dir, String(CHAINS), String(LENGTH)], { env: { ...process.env, NODE_OPTIONS: "" } });
          // Killed mid-chain once it made progress of its own: every chain's claim then carries a count.
          await child.waitFor((lines) => lines.length >= 3);
          await child.kill();
          expect(backgroundFailures(child)).toEqual([]);
          acked += Number(child.lines.at(-1));
          const done = await reopenAndCheck(dir, life);
          // Acks reported were durable; each life chains on from where the last one's records ended.
          expect(done).toBeGreaterThanOrEqual(acked);
          expect(done).toBeGreaterThan(lastDone);
          lastDone = done;
        }
      }),
  );
});
