/**
 * @module The owner election's process scenario, shared by its two files (a
 * local directory in election-processes.test.ts, the S3 protocol server in
 * election-processes-s3.test.ts, so vitest runs them side by side): three
 * worker processes in an owner election and two client processes over one
 * store; the owner is SIGKILLed (a standby takes over within the lease
 * duration plus one renewal interval), then SIGSTOPped until a standby has
 * taken over and SIGCONTed (it writes nothing after it resumes: the new
 * owner's open fenced it), then sent SIGTERM (it releases the lease and a
 * standby takes over without waiting for the lease to expire). Every run
 * ends exactly once with the right result and every client call gets the
 * right answer.
 *
 * Size: `TAQUBA_CLUSTER_RUNS` runs in all (default 36 on a local directory
 * and 12 on S3, to keep each file near a minute on two busy cores).
 */
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { openStore, QueueReader, type ObjectStore } from "taquba";
import { startScript, type ChildScript } from "../support/child-script.js";
import { LinesReadOn } from "../support/lines-read-on.js";
import { ChildScenario } from "../support/child-scenario.js";
import { stalledWithin } from "../support/lateness-probe.js";
import { loadLimitTimeout, waitBound } from "../support/load.js";
import { STEP_QUEUE, STORE_NAME } from "../client/fixtures/app.js";
import { missingRuns } from "../client/fixtures/missing-runs.js";
import { ELECTED_OWNER_FAILURES } from "../client/fixtures/expected-failures.js";
import { expectRunLine, runLines } from "../client/fixtures/run-lines.js";

const WORKER = fileURLToPath(new URL("./fixtures/worker-process.ts", import.meta.url));
const CLIENT = fileURLToPath(new URL("../client/fixtures/client-process.ts", import.meta.url));
/** `TAQUBA_CLUSTER_RUNS`, the runs of a scenario in all, when set. */
export const sized = Number(process.env.TAQUBA_CLUSTER_RUNS ?? 0);

// The lease must outlast the longest time a live owner goes without renewing, or owners lose it
// to nothing but busy cores and the store changes hands over and over (each new owner reopening
// it), which the runs survive but which slows them down without end. An owner renews every
// `renew` ms and loses the lease `lease` ms after its last renewal, so it tolerates a stall of
// lease - renew. Measured with the workers' lateness probe (see lateness-probe.ts) while the
// machine ran these files beside other test files and busy loops, two cores at a load average
// near 40: timers fired up to 1.5 s late. Twice that, for a machine twice as slow, is 3 s;
// lease - renew is 5 s on a local directory. Over S3 each renewal is also a round trip to the
// protocol server, which runs inside the test process and slows down with the machine: 10 s.
export const TIMINGS = { local: { lease: 6_000, renew: 1_000 }, s3: { lease: 12_000, renew: 2_000 } };
// What the lease promises is measured from the kill to the standby's claim. Beyond the lease
// duration plus one renewal interval the claim waits for the standby's reads and its claim (each
// a round trip over S3, to a server in this process) and for a renewal sent just before the kill
// that lands after it. Timer lateness of the claiming worker is measured and allowed on top
// (see expectWithinLease), so this covers only store round trips and stalls under 20 ms a tick.
export const SLACK_MS = { local: 1_500, s3: 3_000 };
// Every wait of the scenario ends within this, stretched by the load as it runs (2 to 4 times,
// ChildScenario.stretchedByLoad), leaving the rest of the test's limit (SCENARIO_TEST_MS) for the
// checks of the outcomes and the cleanup: a wait that runs out fails with the children's state,
// last lines and stderr and the runs not yet printed, instead of the test timing out silently.
// On an idle machine the whole scenario takes about a minute; loaded as above, up to 5 minutes.
const SCENARIO_MS = 225_000;
/** A scenario's test limit: its largest stretch, and 150 s for the checks and the cleanup. */
export const SCENARIO_TEST_MS = loadLimitTimeout(SCENARIO_MS) + 150_000;
// The longest one phase of the runs (a quarter of them, or the clients' last runs) may take.
const PHASE_MS = 240_000;
// A child's start (Node, then tsx compiling the runtime, cold on a fresh clone) took over 60 s
// with several process test files running at once on two loaded cores.
const READY_MS = 180_000;
// Each wait below is bounded by waitBound (its bound on a quiet machine, up to twice that under
// load): a guard against a hang. What the lease promises is checked by expectWithinLease.

interface Worker {
  id: string;
  script: ChildScript;
  /** Its lines as far as `standing` read them (lines-read-on.ts), and the last state line among them. */
  states: LinesReadOn;
  standing: { state: string; at: number } | undefined;
}

/** The time of the last "owner"/"standby"/"stopped" line of a worker, and which it was. */
function standing(w: Worker): { state: string; at: number } | undefined {
  w.states.readOn((l) => {
    if (!(l.startsWith("owner ") || l.startsWith("standby ") || l.startsWith("stopped "))) return;
    const [state, at] = l.split(" ");
    w.standing = { state: state!, at: Number(at) };
  });
  return w.standing;
}

const workerLines = (w: Worker) => w.script.lines;

/**
 * A wait's look at lines of several children, each read on from where its last look stopped
 * (lines-read-on.ts): `each` gets every line once, with its child.
 */
function lookOn<T>(linesOf: (child: T) => readonly string[], each: (line: string, of: T) => void): (children: readonly T[]) => void {
  const readers = new Map<T, LinesReadOn>();
  return (children) => {
    for (const c of children) {
      let reader = readers.get(c);
      if (reader === undefined) readers.set(c, (reader = new LinesReadOn(linesOf(c))));
      reader.readOn((l) => each(l, c));
    }
  };
}

async function keys(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) if (!o.key.endsWith("/~keep")) out.push(o.key);
  return out;
}

/**
 * Three workers and two clients over the store at `url`, `runs` runs in all; the owner killed,
 * stopped and shut down in turn, each takeover checked against the lease (see TIMINGS, SLACK_MS).
 */
export async function electionScenario(
  url: string,
  runs: number,
  env: NodeJS.ProcessEnv,
  slackMs: number,
  timing: { lease: number; renew: number },
  /** Stall lines of this process when it serves the store (the S3 protocol server): a stall here holds up the claim too. */
  serverStalls: readonly string[] = [],
): Promise<void> {
  const LEASE_MS = timing.lease;
  const RENEW_MS = timing.renew;
  const store = openStore(url, { env });
  const run = ChildScenario.stretchedByLoad(SCENARIO_MS);
  const workers: Worker[] = [];
  let serial = 0;
  const startWorker = async (): Promise<Worker> => {
    const id = `w${++serial}`;
    const script = run.track(`worker ${id}`, startScript(WORKER, [url, String(LEASE_MS), String(RENEW_MS), id], { env }));
    const w: Worker = { id, script, states: new LinesReadOn(script.lines), standing: undefined };
    workers.push(w);
    await run.line(`worker ${id}`, w.script, (l) => l === "ready", "ready", waitBound(READY_MS));
    return w;
  };
  const gone = new Set<Worker>();
  const live = () => workers.filter((w) => !gone.has(w));
  const ownerNow = () => live().find((w) => standing(w)?.state === "owner");
  /** The owner, once there is one: between a term's end and the next claim there is none for a moment. */
  const owner = async (): Promise<Worker> => {
    await run.until("an owner", () => ownerNow() !== undefined, waitBound(60_000));
    return ownerNow()!;
  };
  /** Waits for a worker other than `old` to claim the lease after `since`; returns the first to, and when (even if it lost the lease again since). */
  const takeover = async (old: Worker, since: number, what: string): Promise<{ w: Worker; at: number }> => {
    let found: { w: Worker; at: number } | undefined;
    const look = lookOn<Worker>(workerLines, (l, w) => {
      if (!l.startsWith("owner ")) return;
      const at = Number(l.split(" ")[1]);
      if (at >= since && (found === undefined || at < found.at)) found = { w, at };
    });
    await run.until(
      what,
      () => {
        look(live().filter((w) => w !== old));
        return found !== undefined;
      },
      waitBound(60_000),
    );
    return found!;
  };
  /**
   * What the lease promises: the claim comes within the lease duration plus one renewal interval of
   * the owner's end, plus `slackMs` for store round trips, plus the time the claiming worker (or the
   * store server it waits on) was not run at all (its timers fired that late) or waited 20 ms or
   * more on a request for the lease objects, since its last look at the old owner's lease.
   */
  const expectWithinLease = (what: string, since: number, claim: { w: Worker; at: number }) => {
    const took = claim.at - since;
    const late = stalledWithin([claim.w.script.lines, serverStalls], since - 2 * RENEW_MS, claim.at);
    const notRun = `${late} ms of it with ${claim.w.id} or the store server not run or waiting on the lease objects`;
    console.log(`${what}: ${took} ms, ${notRun}; bound ${LEASE_MS + RENEW_MS + slackMs} ms plus that`);
    expect(took - late, `${what}: ${took} ms, ${notRun}, ms`).toBeLessThanOrEqual(LEASE_MS + RENEW_MS + slackMs);
  };

  const perClient = Math.ceil(runs / 2);
  const tags = ["a", "b"];
  const clients: ChildScript[] = [];
  run.onReport(() => missingRuns(url, env, clients, tags, perClient));
  // Runs the clients printed (a line each), their lines read on: the quarters' waits look every few milliseconds.
  let finishedRuns = 0;
  const countRuns = lookOn<ChildScript>(
    (c) => c.lines,
    (l) => void (l.startsWith("{") && finishedRuns++),
  );
  const finished = () => {
    countRuns(clients);
    return finishedRuns;
  };
  const reachQuarter = (q: number) =>
    run.until(
      `${q}/4 of the runs finished`,
      () => finished() >= Math.floor((q * perClient * 2) / 4) || clients.every((c) => c.lines.includes("done")),
      waitBound(PHASE_MS),
    );
  // The report printed on a failed expectation, every child SIGKILLed and gone before the directory is removed, then
  // the children's background failures checked: the clients expect none (a takeover only delays their answers).
  const expected = (name: string) => (name.startsWith("worker ") ? ELECTED_OWNER_FAILURES : []);
  await run.runToEnd(expected, async () => {
    for (let i = 0; i < 3; i++) await startWorker();
    await owner();
    // A client's calls wait for an answer up to what is left of the scenario's deadline (at least the client's 180 s):
    // the deadline is what guards against a hang, and a call past it fails the scenario with the runs missing.
    const clientEnv = { ...env, TAQUBA_TEST_CLIENT_TIMEOUT_MS: String(Math.max(180_000, run.remainingMs)) };
    for (const tag of tags) clients.push(run.track(`client ${tag}`, startScript(CLIENT, [url, tag, String(perClient), "6"], { env: clientEnv })));

    // 1. SIGKILL: a standby claims the lease within the lease duration plus one renewal interval.
    await reachQuarter(1);
    const killed = await owner();
    const killAt = Date.now();
    await killed.script.kill();
    gone.add(killed);
    const afterKill = await takeover(killed, killAt, "a takeover after SIGKILL");
    expectWithinLease("takeover after SIGKILL", killAt, afterKill);
    await startWorker();

    // 2. SIGSTOP until a standby has taken over and opened the store, then SIGCONT: the old owner writes nothing.
    await reachQuarter(2);
    const paused = await owner();
    const stopAt = Date.now();
    process.kill(paused.script.pid, "SIGSTOP");
    let contAt = 0;
    try {
      expectWithinLease("takeover from a stopped owner", stopAt, await takeover(paused, stopAt, "a takeover from a stopped owner"));
      // The claimer may lose the lease again before its open is through (timers late on busy cores),
      // and a later claimer open it: what fences the paused owner is that someone opened it.
      let opened = false;
      const lookForOpen = lookOn<Worker>(workerLines, (l) => void (l.startsWith("started ") && Number(l.split(" ")[2]) >= stopAt && (opened = true)));
      await run.until(
        "a new owner opened the store",
        () => {
          lookForOpen(workers.filter((w) => w !== paused));
          return opened;
        },
        waitBound(60_000),
      );
    } finally {
      contAt = Date.now();
      process.kill(paused.script.pid, "SIGCONT");
    }
    let standbyAt: number | undefined;
    const pausedLines = new LinesReadOn(paused.script.lines);
    await run.until(
      "the resumed owner stands by",
      () => {
        pausedLines.readOn((l) => {
          if (standbyAt !== undefined || !l.startsWith("standby ")) return;
          const at = Number(l.split(" ")[1]);
          if (at >= contAt) standbyAt = at;
        });
        return standbyAt !== undefined;
      },
      waitBound(60_000),
    );
    // Until it stood by: a later claim of the lease (should the new owner lose it) would be legitimate.
    const lateWrites = paused.script.lines.filter((l) => l.startsWith("write ") && Number(l.split(" ")[1]) >= contAt && Number(l.split(" ")[1]) <= standbyAt!);
    expect(lateWrites, "writes the resumed owner started after SIGCONT").toEqual([]);

    // 3. SIGTERM: the owner releases the lease; a standby follows well before the lease would expire.
    await reachQuarter(3);
    const leaving = await owner();
    const termAt = Date.now();
    process.kill(leaving.script.pid, "SIGTERM");
    const afterTerm = await takeover(leaving, termAt, "a takeover after SIGTERM");
    expect(await run.exit(`worker ${leaving.id}`, leaving.script, waitBound(60_000))).toEqual({ code: 0, signal: null });
    gone.add(leaving);
    expect(afterTerm.at - termAt, "takeover after SIGTERM, ms").toBeLessThan(LEASE_MS);

    for (const [i, c] of clients.entries()) {
      const exit = await run.exit(`client ${tags[i]}`, c, waitBound(PHASE_MS));
      expect(exit, c.stderr()).toEqual({ code: 0, signal: null });
    }
    await run.until("the inbox is empty", async () => (await keys(store, `${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`)).length === 0, waitBound(30_000));
  });

  const lines = runLines(clients);
  expect(lines).toHaveLength(perClient * 2);
  const reader = await QueueReader.open(store, STORE_NAME);
  try {
    for (const line of lines) await expectRunLine(line, reader);
    expect(
      (await reader.kvScan(`workflow/signal-buf/${STEP_QUEUE}/`)).entries.map((e) => e.key),
      "buffered signals left",
    ).toEqual([]);
  } finally {
    await reader.close();
  }
}
