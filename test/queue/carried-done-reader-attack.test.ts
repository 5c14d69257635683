/**
 * @module Attack on done counts carried by claimed entries from another
 * process: a `QueueReader` here refreshes and reads the stats while a
 * child process works chains whose acks claim their follow-ups (each ack's
 * done job counted in the follow-up's claimed entry), checkpointing as it
 * goes, until it is killed with SIGKILL. At every refresh the stats are
 * one consistent moment: each chain one live job, done never falling and
 * never behind the acks the child reported durable before the refresh;
 * after the kill, the reader and the recovering owner agree.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue, QueueReader } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/chain-until-killed.ts", import.meta.url));
const tempDir = useTempDirs("taquba-carried-reader-");

describe("done counts carried by claimed entries, read from another process", () => {
  it(
    "a reader refreshing while a child works chains sees consistent, growing stats; after a SIGKILL it and the recovering owner agree",
    { timeout: loadLimitTimeout(90_000) },
    () =>
      withinLoadLimit(90_000, async () => {
        const CHAINS = 6;
        // Long enough that no chain ends before the kill.
        const LENGTH = 100_000;
        const dir = await tempDir();
        const child = startScript(FIXTURE, [dir, String(CHAINS), String(LENGTH)], { env: { ...process.env, NODE_OPTIONS: "" } });
        await child.waitFor((lines) => lines.length >= 1);
        const reader = await QueueReader.open(new LocalStore(dir), "crash");
        let lastDone = 0;
        let reads = 0;
        // Until the child has reported well past where the reader started, and the reader has seen it grow.
        while (reads < 10 || Number(child.lines.at(-1)) < 2000) {
          const reported = Number(child.lines.at(-1));
          await reader.refresh();
          const s = await reader.stats("chain");
          expect(s.pending + s.claimed, `read ${reads}: one live job per chain in ${JSON.stringify(s)}`).toBe(CHAINS);
          expect(s.scheduled + s.dead).toBe(0);
          expect(s.done, `read ${reads}: done never falls`).toBeGreaterThanOrEqual(lastDone);
          expect(s.done, `read ${reads}: done holds every ack reported durable before the refresh`).toBeGreaterThanOrEqual(reported);
          lastDone = s.done;
          reads++;
          await child.waitFor((lines) => lines.length > 0 && Number(lines.at(-1)) > reported);
        }
        await child.kill();
        expect(backgroundFailures(child)).toEqual([]);
        await reader.refresh();
        const atKill = await reader.stats("chain");
        expect(atKill.done).toBeGreaterThanOrEqual(lastDone);
        await reader.close();
        const q = await Queue.open(new LocalStore(dir), "crash", { flushIntervalMs: 0 });
        // Recovery requeues the chains' claims and moves what their entries carried into the stats record.
        expect(await q.view().stats("chain")).toEqual({ pending: CHAINS, scheduled: 0, claimed: 0, done: atKill.done, dead: 0 });
        expect(q.recovery.requeued.length).toBe(CHAINS);
        await q.close();
        const again = await QueueReader.open(new LocalStore(dir), "crash");
        expect(await again.stats("chain")).toEqual({ pending: CHAINS, scheduled: 0, claimed: 0, done: atKill.done, dead: 0 });
        await again.close();
      }),
  );
});
