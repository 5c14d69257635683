/**
 * @module The sharded cluster's process scenario, shared by its two files (a
 * local directory in shard-processes.test.ts, the S3 protocol server in
 * shard-processes-s3.test.ts, so vitest runs them side by side). Three
 * worker processes share four shards and two client processes submit, signal, cancel and wait through the router, over a
 * local directory and over the S3 protocol server. At random points of the
 * work (seeded: the seed is printed, TAQUBA_TEST_SEED replays it) a random
 * owner is SIGKILLed (and a fresh worker started) or SIGSTOPped until its
 * shards are taken over and then SIGCONTed; at least one of each, more on
 * larger sizes. Each lost shard gets a new owner within the lease duration
 * plus one renewal interval, a resumed worker writes nothing to its former
 * shards, and every run ends exactly once on its own shard with the right
 * result.
 *
 * Size: `TAQUBA_CLUSTER_RUNS` runs in all (default: the 1,000 on a
 * local directory, about two and a half minutes on two cores at load 11,
 * and 12 on S3, whose protocol server runs inside the test process and
 * shares its core; the deadline grows with the size).
 */
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { createShards, openStore, QueueReader, shardOfRun, type ObjectStore } from "taquba";
import { shardStoreName } from "../../runtime/client/shard-route.js";
import { startScript, type ChildScript } from "../support/child-script.js";
import { LinesReadOn } from "../support/lines-read-on.js";
import { ChildScenario } from "../support/child-scenario.js";
import { stalledWithin } from "../support/lateness-probe.js";
import { loadLimitTimeout, waitBound } from "../support/load.js";
import type { TestRandom } from "../support/seed.js";
import { STEP_QUEUE } from "../client/fixtures/app.js";
import { missingRuns } from "../client/fixtures/missing-runs.js";
import { ELECTED_OWNER_FAILURES } from "../client/fixtures/expected-failures.js";
import { expectRunLine, runLines } from "../client/fixtures/run-lines.js";

const WORKER = fileURLToPath(new URL("./fixtures/shard-worker-process.ts", import.meta.url));
const CLIENT = fileURLToPath(new URL("../client/fixtures/client-process.ts", import.meta.url));
const sized = Number(process.env.TAQUBA_CLUSTER_RUNS ?? 0);

const SHARDS = 4;
// See election-scenario.ts for the lease timings, the slack and the deadlines.
export const TIMINGS = { local: { lease: 6_000, renew: 1_000 }, s3: { lease: 12_000, renew: 2_000 } };
export const SLACK_MS = { local: 2_000, s3: 4_000 };
/** The runs in all unless `TAQUBA_CLUSTER_RUNS` says (see the module documentation for the sizes). */
export const RUNS = { local: sized || 1000, s3: sized || 12 };
/**
 * The scenario's one deadline on a quiet machine: 450 s, and more for the larger sizes run by hand (0.6 s a
 * run beyond 550); stretched by the load as it runs, up to twice that (ChildScenario.stretchedByLoad of half).
 */
const scenarioMs = (runs: number) => 450_000 + Math.max(0, runs - 550) * 600;
/** A scenario's test limit: its deadline's largest stretch, and 150 s for the checks and the cleanup. */
export const scenarioTestMs = (runs: number) => loadLimitTimeout(scenarioMs(runs) / 2) + 150_000;
const PHASE_MS = 240_000;
// A child's start (Node, then tsx compiling the runtime, cold on a fresh clone) took over 60 s
// with several process test files running at once on two loaded cores.
const READY_MS = 180_000;
// Each wait below is bounded by waitBound (its bound on a quiet machine, up to twice that under
// load): a guard against a hang. What the lease promises is checked against the claim's time,
// net of the time its worker or the store server was not run.

interface Worker {
  id: string;
  script: ChildScript;
}

/** Each worker's lines as far as `shardStates` read them, and what it found. */
const readStates = new WeakMap<Worker, { reader: LinesReadOn; states: Map<number, { state: string; at: number }> }>();

/** Per shard, the worker's last "owner"/"standby"/"stopped" line: state and time (its lines read on, see lines-read-on.ts). */
function shardStates(w: Worker): ReadonlyMap<number, { state: string; at: number }> {
  let seen = readStates.get(w);
  if (seen === undefined) readStates.set(w, (seen = { reader: new LinesReadOn(w.script.lines), states: new Map() }));
  const { states } = seen;
  seen.reader.readOn((l) => {
    if (!(l.startsWith("owner ") || l.startsWith("standby ") || l.startsWith("stopped "))) return;
    const [state, shard, at] = l.split(" ");
    states.set(Number(shard), { state: state!, at: Number(at) });
  });
  return states;
}

/**
 * Every worker's lines about shard `s` from `from` to `to`, in time order,
 * each led by its time in ms since `origin`: its state changes, its lease
 * writes and slow lease requests, and its stalls (a failed takeover bound
 * says why with these).
 */
function leaseHistory(workers: readonly Worker[], s: number, origin: number, from: number, to: number): string {
  const leasePrefix = `${shardStoreName("app", s)}/lease/`;
  const timed: Array<[number, string]> = [];
  for (const w of workers) {
    for (const l of w.script.lines) {
      const f = l.split(" ");
      const at = f[0] === "write" || f[0] === "waited" || f[0] === "late" ? Number(f[1]) : Number(f[2]);
      const about =
        f[0] === "late" ||
        (f[0] === "write" ? f[3] : f[0] === "waited" ? f[3] : undefined)?.startsWith(leasePrefix) ||
        (f[1] === String(s) && f[0] !== "write");
      if (about && at >= from && at <= to) timed.push([at, `${at - origin} ${w.id} ${l}`]);
    }
  }
  return timed
    .sort((a, b) => a[0] - b[0])
    .map(([, l]) => l)
    .join("\n");
}

/**
 * Three workers over four shards and two clients over the store at `url`, `runs` runs in all; owners
 * killed or stopped at the seeded points `rnd` draws, each takeover checked against the lease.
 */
export async function shardScenario(
  url: string,
  runs: number,
  env: NodeJS.ProcessEnv,
  slackMs: number,
  timing: { lease: number; renew: number },
  rnd: TestRandom,
  /** Stall lines of this process when it serves the store (the S3 protocol server): a stall here holds up the claim too. */
  serverStalls: readonly string[] = [],
): Promise<void> {
  const LEASE_MS = timing.lease;
  const RENEW_MS = timing.renew;
  const store: ObjectStore = openStore(url, { env });
  await createShards(store, "app", SHARDS);
  const run = ChildScenario.stretchedByLoad(scenarioMs(runs) / 2);
  const workers: Worker[] = [];
  const gone = new Set<Worker>();
  let serial = 0;
  const startWorker = async (): Promise<Worker> => {
    const id = `w${++serial}`;
    const w = { id, script: run.track(`worker ${id}`, startScript(WORKER, [url, String(LEASE_MS), String(RENEW_MS), id], { env })) };
    workers.push(w);
    await run.line(`worker ${id}`, w.script, (l) => l === "ready", "ready", waitBound(READY_MS));
    return w;
  };
  const live = () => workers.filter((w) => !gone.has(w));
  const ownerOf = (shard: number, since = 0, not?: Worker) =>
    live().find((w) => {
      const s = shardStates(w).get(shard);
      return w !== not && s?.state === "owner" && s.at >= since;
    });
  const owned = (w: Worker) => [...shardStates(w)].filter(([, s]) => s.state === "owner").map(([shard]) => shard);
  const allOwned = () => Array.from({ length: SHARDS }, (_, i) => ownerOf(i)).every((w) => w !== undefined);
  /** Waits until each of `shards` was claimed by a worker other than `old` since `since`; returns each first claim, by whom and when. */
  const takenOver = async (shards: number[], old: Worker, since: number): Promise<Array<{ shard: number; w: Worker; at: number }>> => {
    // The first claim after `since` counts, even if that worker has handed the shard on since. Each worker's
    // lines are read on from where the last look stopped (see shardStates).
    const first = new Map<number, { shard: number; w: Worker; at: number }>();
    const readers = new Map<Worker, LinesReadOn>();
    const look = () => {
      for (const w of workers) {
        if (w === old) continue;
        let reader = readers.get(w);
        if (reader === undefined) readers.set(w, (reader = new LinesReadOn(w.script.lines)));
        reader.readOn((l) => {
          if (!l.startsWith("owner ")) return;
          const [, shard, t] = l.split(" ");
          const s = Number(shard);
          const claim = first.get(s);
          if (shards.includes(s) && Number(t) >= since && (claim === undefined || Number(t) < claim.at)) first.set(s, { shard: s, w, at: Number(t) });
        });
      }
      return shards.every((s) => first.has(s));
    };
    await run.until(`shards ${shards.join(", ")} taken over`, look, waitBound(60_000));
    return shards.map((s) => first.get(s)!);
  };
  /**
   * A look at whether workers other than `old` opened each of `shards` since `since`; each worker's lines are read on
   * from where the last look stopped (a worker prints a line per write), and a worker started since is read too.
   */
  const openedSince = (shards: readonly number[], old: Worker, since: number): (() => boolean) => {
    const opened = new Set<number>();
    const readers = new Map<Worker, LinesReadOn>();
    return () => {
      for (const w of workers) {
        if (w === old) continue;
        let reader = readers.get(w);
        if (reader === undefined) readers.set(w, (reader = new LinesReadOn(w.script.lines)));
        reader.readOn((l) => {
          if (!l.startsWith("started ")) return;
          const [, shard, t] = l.split(" ");
          if (Number(t) >= since) opened.add(Number(shard));
        });
      }
      return shards.every((s) => opened.has(s));
    };
  };

  const perClient = Math.ceil(runs / 2);
  const tags = ["a", "b"];
  const clients: ChildScript[] = [];
  run.onReport(() => missingRuns(url, env, clients, tags, perClient));
  const finished = () => clients.reduce((n, c) => n + c.lines.filter((l) => l.startsWith("{")).length, 0);
  const reach = (fraction: number) =>
    run.until(
      `${Math.round(fraction * 100)}% of the runs finished`,
      () => finished() >= Math.floor(fraction * perClient * 2) || clients.every((c) => c.lines.includes("done")),
      waitBound(PHASE_MS),
    );
  const t0 = Date.now();
  const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  // The report printed on a failed expectation, every child SIGKILLed and gone before the directory is removed, then
  // the children's background failures checked: the clients expect none (a takeover only delays their answers).
  const expected = (name: string) => (name.startsWith("worker ") ? ELECTED_OWNER_FAILURES : []);
  await run.runToEnd(expected, async () => {
    // Started together: each child's start-up (Node, then tsx) is most of the time to ready.
    await Promise.all([startWorker(), startWorker(), startWorker()]);
    await run.until("every shard owned", allOwned, waitBound(60_000));
    // A client's calls wait for an answer up to what is left of the scenario's deadline (at least the client's 180 s):
    // the deadline is what guards against a hang, and a call past it fails the scenario with the runs missing.
    // Started only now: their answer polls would add to the store server's requests while the owners open the shards.
    const clientEnv = { ...env, TAQUBA_TEST_CLIENT_TIMEOUT_MS: String(Math.max(180_000, run.remainingMs)) };
    for (const tag of tags) clients.push(run.track(`client ${tag}`, startScript(CLIENT, [url, tag, String(perClient), "6", "routed"], { env: clientEnv })));

    // The events, at random points of the work: at least one SIGKILL and one SIGSTOP/SIGCONT.
    const events = Math.min(6, Math.max(2, Math.floor(runs / 150)));
    const kinds: Array<"kill" | "stop"> = ["kill", "stop"];
    while (kinds.length < events) kinds.push(rnd.int(2) === 0 ? "kill" : "stop");
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = rnd.int(i + 1);
      [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
    }
    console.log(`shard processes: seed ${rnd.seed}, ${runs} runs, events ${kinds.join(", ")}`);
    // A worker started after a kill, while the work goes on: ready before the next event, or before the clients' end.
    let replacement: Promise<Worker> | undefined;
    for (const [i, kind] of kinds.entries()) {
      await reach((i + 0.2 + 0.6 * rnd.random()) / (kinds.length + 1));
      await replacement;
      await run.until("every shard owned", allOwned, waitBound(60_000));
      const owners = live().filter((w) => owned(w).length > 0);
      const victim = owners[rnd.int(owners.length)]!;
      // At a random point of the victim's renewal cycle.
      await new Promise((r) => setTimeout(r, rnd.int(RENEW_MS)));
      const lost = owned(victim);
      const at = Date.now();
      console.log(`${kind} of ${victim.id} (shards ${lost.join(", ")}) at ${elapsed()}, ${finished()} runs ended`);
      if (kind === "kill") {
        await victim.script.kill();
        gone.add(victim);
      } else {
        process.kill(victim.script.pid, "SIGSTOP");
      }
      let contAt = 0;
      try {
        // What the lease promises: each shard is claimed within the lease duration plus one
        // renewal interval of the owner's end, plus `slackMs` for store round trips, plus the time
        // the claiming worker (or the store server it waits on) was not run at all (its timers fired
        // that late) or waited 20 ms or more on a request for the shard's lease objects, since its
        // last look (a lease put that syncs a file took seconds behind other test files' writes).
        for (const claim of await takenOver(lost, victim, at)) {
          const took = claim.at - at;
          // Its waits on other shards' leases held up nothing of this claim.
          const leasePrefix = `${shardStoreName("app", claim.shard)}/lease/`;
          const claimerLines = claim.w.script.lines.filter((l) => !l.startsWith("waited ") || l.split(" ")[3]!.startsWith(leasePrefix));
          const late = stalledWithin([claimerLines, serverStalls], at - 2 * RENEW_MS, claim.at);
          const what = `takeover of shard ${claim.shard} of a ${kind === "kill" ? "killed" : "stopped"} worker by ${claim.w.id}: ${took} ms, ${late} ms of it with ${claim.w.id} or the store server not run or waiting on the shard's lease objects`;
          console.log(`${what}; bound ${LEASE_MS + RENEW_MS + slackMs} ms plus that`);
          // Over the bound, the message carries what every worker did about the shard's lease meanwhile.
          const history =
            took - late > LEASE_MS + RENEW_MS + slackMs ? `\n${leaseHistory(workers, claim.shard, at, at - 2 * RENEW_MS, claim.at + RENEW_MS)}\n` : "";
          expect(took - late, `${what}${history}, ms`).toBeLessThanOrEqual(LEASE_MS + RENEW_MS + slackMs);
        }
        if (kind === "stop") await run.until("the new owners opened the shards", openedSince(lost, victim, at), waitBound(60_000));
      } finally {
        if (kind === "stop") {
          contAt = Date.now();
          process.kill(victim.script.pid, "SIGCONT");
        }
      }
      if (kind === "kill") {
        replacement = startWorker();
        // Its failure to start is awaited (and thrown) below, not left unhandled meanwhile.
        replacement.catch(() => {});
        continue;
      }
      // When it first stood by for each shard after SIGCONT: a later claim (balancing) would be legitimate.
      // Its lines read on from where the last look stopped, as `openedSince` reads them.
      const doneAt = new Map<number, number>();
      const victimLines = new LinesReadOn(victim.script.lines);
      const stoodByAll = () => {
        victimLines.readOn((l) => {
          if (!l.startsWith("standby ")) return;
          const [, shard, t] = l.split(" ");
          const s = Number(shard);
          if (Number(t) >= contAt && !doneAt.has(s)) doneAt.set(s, Number(t));
        });
        return lost.every((s) => doneAt.has(s));
      };
      await run.until("the resumed worker gave its shards up", stoodByAll, waitBound(60_000));
      // Each shard's window ends when the worker stood by for that shard: once standing by, it may try a
      // claim from a stale look (a lease put the protocol then withdraws), which is no write of the lost term.
      const shardWrites = victim.script.lines.filter((l) => {
        const [word, t, , key] = l.split(" ");
        if (word !== "write") return false;
        const shard = lost.find((s) => key!.startsWith(`${shardStoreName("app", s)}/`));
        return shard !== undefined && Number(t) >= contAt && Number(t) <= doneAt.get(shard)!;
      });
      // Joined, so that a failure names the keys and times (an array would be cut short in the message).
      expect(shardWrites.join("\n"), `writes to its shards the resumed worker started after SIGCONT (at ${contAt})`).toBe("");
    }

    await replacement;
    for (const [i, c] of clients.entries()) expect(await run.exit(`client ${tags[i]}`, c, waitBound(PHASE_MS)), c.stderr()).toEqual({ code: 0, signal: null });
    console.log(`every run ended at ${elapsed()}`);
  });

  const lines = runLines(clients);
  expect(lines).toHaveLength(perClient * 2);
  const readers = await Promise.all(Array.from({ length: SHARDS }, (_, i) => QueueReader.open(store, shardStoreName("app", i))));
  const perShard = new Array<number>(SHARDS).fill(0);
  try {
    for (const line of lines) {
      const shard = shardOfRun(line.runId, SHARDS);
      perShard[shard]!++;
      await expectRunLine(line, readers[shard]!);
      const key = `workflow/outcomes/${STEP_QUEUE}/${line.runId}`;
      // On no other shard.
      for (const [i, r] of readers.entries()) if (i !== shard) expect(await r.kvGet(key), `${line.runId} on shard ${i}`).toBeNull();
    }
    for (const r of readers) expect((await r.kvScan(`workflow/signal-buf/${STEP_QUEUE}/`)).entries, "buffered signals left").toEqual([]);
  } finally {
    for (const r of readers) await r.close();
  }
  expect(perShard.filter((n) => n > 0).length, "runs spread over the shards").toBeGreaterThan(1);
}
