/**
 * @module Chaos: workflow runs under SIGKILLs of the worker process and a
 * store fault rate, checked for lost runs, lost results, duplicated
 * terminal outcomes and repeated memoized effects.
 *
 * A parent process starts a worker process over a LocalStore directory
 * whose every store call (engine and memo) fails at FAULT_RATE
 * (`withFaults`). The worker submits RUNS runs of five steps each: step 0
 * memoizes an effect and continues at once; step 1 memoizes and continues
 * after a 10-100 ms timer; step 2 memoizes and continues on a signal (the
 * worker sends it 0-50 ms later, or the 5 s timeout fires when a kill lost
 * it); step 3 memoizes in the run memo and continues; step 4 memoizes and
 * succeeds. Every step also stages a KV effect. While runs progress, the
 * parent SIGKILLs the worker KILLS times (spread over the submission period,
 * each at a random moment once the worker has worked a step) and starts a
 * new one; a worker that stops by itself
 * (an engine poisoned by faults) is restarted too and counted.
 *
 * Every worker appends to one log file (O_APPEND, one short write per
 * line): `submitted` after a submit resolved, `job` when a step starts
 * (naming its step job, so a step enqueued twice shows as two job ids:
 * reported as steps run by more than one step job), `begin` when a step calls
 * memoized, `effect` when the computation runs, `stored` when memoized
 * returned, `terminal` from the
 * terminal hook. At the end the parent stops the last worker, opens the
 * store itself without faults and reports:
 * - runs lost: acknowledged submissions with no terminal state (unknown, or still active at the end);
 * - runs failed: runs that terminated otherwise than `succeeded` (a step killed
 *   inside more often than its attempt limit of 5 is dead-lettered: a kill counts an attempt);
 * - results lost: succeeded runs whose outcome() is null or wrong, or whose KV effects are missing;
 * - duplicated terminal outcomes: runs the hook saw with two different outcomes;
 * - repeated memoized effects: computations that ran again for the same
 *   memo key, split into those whose read began before any process stored
 *   the value (a kill or fault inside the step, or a step whose lease ran
 *   out claimed again beside itself: expected) and those whose read began
 *   after (a memo lost: a bug).
 *
 * - step jobs done: the step queue's stats against the model of one done job
 *   per step and one for the terminal hook's notification of each succeeded
 *   run, none pending, claimed, scheduled or dead
 *   once every run succeeded.
 *
 * With RESUBMIT=n each run id is submitted n more times, each time once
 * the run before ended (by its hook's call), as generation 1..n: every
 * memoized value names its generation, so a run reading an earlier
 * submission's memo set stores another value (counted: memo values of
 * another submission read), and the check compares the latest
 * generation's result and KV effects.
 *
 * Env: RUNS (1000), KILLS (50), FAULT_RATE (0.05), SUBMIT_RATE (4 runs per
 * second: kills are spread over the RUNS / SUBMIT_RATE seconds of
 * submissions), SEED (1), TIMEOUT_S (1800), STORE (`local`, or `s3`: the
 * S3 protocol server on loopback, s3rver, which the parent starts and every
 * worker reaches through S3Store), MAX_ATTEMPTS (5, a step's attempt limit:
 * every kill inside a step counts one, so passes with many kills raise it),
 * KILL_FOR_S (no limit: kills stop after this many seconds, and the pass
 * then waits for the runs left to end), LEASE_MS (3000, the step queue's
 * lease: shorter ones make a slow step's lease run out while it works). The pass ends once every run ended
 * (with fewer kills than KILLS if the runs ended first) or at TIMEOUT_S.
 * Run: `npx tsx bench/chaos.ts`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import { buildSync } from "esbuild";
import {
  LocalStore,
  Queue,
  S3Store,
  StepOutcome,
  WorkflowRuntime,
  withFaults,
  type Memo,
  type ObjectStore,
  type StepRunner,
  type TerminalHook,
} from "../runtime/index.js";
import { startS3Server } from "../test/support/s3-server.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null | undefined) => (b == null ? String(b) : new TextDecoder().decode(b));
const runIdOf = (i: number) => `chaos-${i}`;
/** Each run id is submitted 1 + RESUBMIT times, each submission once the one before ended (its generation). */
const RESUBMIT = Number(process.env.RESUBMIT ?? 0);
/** A submission's name in the log: its run id and generation (a run id holds no dot). */
const logIdOf = (id: string, gen: number) => `${id}.${gen}`;
const expectedResult = (id: string, gen = 0) => `done:${id}:${memoValue("d", id, gen)}`;
/** A memoized value names its run and generation: a submission reading an earlier one's memo returns another value. */
const memoValue = (key: string, id: string, gen: number) => (gen === 0 ? `${key}-${id}` : `${key}-${id}.${gen}`);
const STEP_QUEUE_CONFIG = { "workflow-steps": { leaseMs: Number(process.env.LEASE_MS ?? 3_000), backoff: { baseMs: 50, maxMs: 1_000 } } };
/** A run's jobs on the step queue: its five steps and the terminal hook's notification. */
const JOBS_PER_RUN = 6;
const MAX_ATTEMPTS = Number(process.env.MAX_ATTEMPTS ?? 5);

/** Where the runs live: a LocalStore directory, or a prefix of the S3 protocol server's bucket (passed to workers as JSON). */
type StoreSpec = { kind: "local"; dir: string } | { kind: "s3"; bucket: string; clientConfig: S3ClientConfig };

function openStore(spec: StoreSpec): ObjectStore {
  if (spec.kind === "local") return new LocalStore(spec.dir);
  return new S3Store({ bucket: spec.bucket, prefix: "chaos", clientConfig: spec.clientConfig });
}

// ---- worker process ---------------------------------------------------------

async function worker(dir: string, runs: number, faultRate: number, seed: number, submitRate: number, spec: StoreSpec): Promise<void> {
  const logFile = join(dir, "events.log");
  const log = (line: string) => appendFileSync(logFile, `${line}\n`);
  const pid = process.pid;
  const store = withFaults(openStore(spec), { failureRate: faultRate, seed: seed * 7919 + pid });
  const queue = await Queue.open(store, "chaos", { queueConfigs: STEP_QUEUE_CONFIG });

  const signalsDue = new Map<string, number>();
  // `effect` and `stored` lines name the submission's memo set: a run id submitted again after a kill
  // cut its `submitted` line may start a second run of one generation, with a set of its own.
  let calls = 0;
  const once = async (memo: Memo, id: string, gen: number, step: number, key: string): Promise<string> => {
    const lid = logIdOf(id, gen);
    const set = memo.memoSet ?? "-";
    // Each computation named by its call: a repeat is a lost memo only when its read began after the value was stored.
    const call = `${pid}.${++calls}`;
    log(`begin ${lid} ${step} ${key} ${pid} ${set} ${call}`);
    const v = await memo.memoized(key, async () => {
      log(`effect ${lid} ${step} ${key} ${pid} ${set} ${call}`);
      return memoValue(key, id, gen);
    });
    log(`stored ${lid} ${step} ${key} ${pid} ${set}${v === memoValue(key, id, gen) ? "" : " foreign"}`);
    return v;
  };
  const runner: StepRunner = {
    async runStep(s) {
      const id = s.runId;
      const gen = Number(s.headers.gen ?? 0);
      const k = s.stepNumber;
      const key = "abcde"[k]!;
      // Which job ran the step: a step of one submission run by two job ids is a step enqueued twice.
      log(`job ${logIdOf(id, gen)} ${k} ${s.jobId} ${s.attempt} ${pid} ${s.memo.memoSet ?? "-"}`);
      const v = await once(k === 3 ? s.runMemo : s.memo, id, gen, k, key);
      s.effects.put(`chaos/${id}/${k}`, enc(v));
      if (k === 0) return StepOutcome.continueNow(enc(v));
      if (k === 1) return StepOutcome.continueAfter(enc(v), 10 + Math.floor(Math.random() * 90));
      if (k === 2) {
        signalsDue.set(logIdOf(id, gen), Date.now() + Math.floor(Math.random() * 50));
        return StepOutcome.continueOnSignal(enc(v), `sig-${logIdOf(id, gen)}`, 5_000);
      }
      if (k === 3) {
        log(`signal ${logIdOf(id, gen)} ${s.signal === null ? "timeout" : "payload"}`);
        return StepOutcome.continueNow(enc(s.signal === null ? "timeout" : dec(s.signal)));
      }
      return StepOutcome.succeed(enc(`done:${id}:${await once(s.runMemo, id, gen, 3, "d")}`));
    },
  };
  const hook: TerminalHook = {
    async onTermination(o) {
      log(`terminal ${logIdOf(o.runId, Number(o.headers.gen ?? 0))} ${o.status} ${o.result === undefined ? "-" : dec(o.result)}`);
      if (o.status === "succeeded") resubmitNext(o.runId, Number(o.headers.gen ?? 0));
    },
  };
  const runtime = WorkflowRuntime.builder(queue, store, runner, hook)
    .logger({ error: () => undefined })
    .build();
  const handle = runtime.spawn();

  const stop = async (code: number) => {
    clearInterval(signaller);
    await handle.shutdown().catch(() => undefined);
    await queue.close().catch(() => undefined);
    process.exit(code);
  };
  process.on("SIGTERM", () => void stop(0));
  handle.done.then(
    () => void stop(queue.closed ? 2 : 0),
    () => void stop(3),
  );

  const signaller = setInterval(() => {
    const now = Date.now();
    for (const [id, due] of signalsDue) {
      if (due > now) continue;
      signalsDue.delete(id);
      runtime.signal(`sig-${id}`, enc(`payload-${id}`)).catch(() => signalsDue.set(id, now + 100));
    }
  }, 10);

  // Submit every run no earlier worker acknowledged; an acknowledged one is never resubmitted,
  // so a run lost after its acknowledgement stays lost and is counted.
  const submitOnce = async (id: string, gen: number): Promise<void> => {
    for (;;) {
      try {
        const headers = gen === 0 ? {} : { headers: { gen: String(gen) } };
        await runtime.submit({ input: enc(logIdOf(id, gen)), runId: id, options: { maxAttemptsPerStep: MAX_ATTEMPTS, ...headers } });
        log(`submitted ${logIdOf(id, gen)}`);
        return;
      } catch (e) {
        if (queue.closed) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const startedGens = new Set<string>();
  // The next generation of a run id, once its run ended: by the hook's call, or at start for an end an earlier worker saw.
  function resubmitNext(id: string, gen: number): void {
    if (gen >= RESUBMIT || startedGens.has(logIdOf(id, gen + 1))) return;
    startedGens.add(logIdOf(id, gen + 1));
    submitOnce(id, gen + 1).catch(() => stop(2));
  }
  const earlier = readLog(logFile);
  const acked = new Set(earlier.filter((l) => l[0] === "submitted").map((l) => l[1]!));
  for (const l of earlier) {
    if (l[0] !== "terminal" || l[2] !== "succeeded") continue;
    const [id, gen] = l[1]!.split(".");
    if (!acked.has(logIdOf(id!, Number(gen) + 1))) resubmitNext(id!, Number(gen));
  }
  const todo = Array.from({ length: runs }, (_, i) => runIdOf(i)).filter((id) => !acked.has(logIdOf(id, 0)));
  // Submitted at SUBMIT_RATE runs per second (started on schedule, not one after another), so
  // runs are in every phase all along and the kills land on steady work rather than on one backlog.
  const begin = Date.now();
  const submitting: Promise<void>[] = [];
  for (const [i, id] of todo.entries()) {
    const wait = begin + (1000 * i) / submitRate - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    submitting.push(submitOnce(id, 0));
  }
  await Promise.all(submitting).catch(() => stop(2));
}

// ---- parent -----------------------------------------------------------------

function readLog(file: string): string[][] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => l.split(" "));
}

/**
 * This file bundled once into one JavaScript file (packages stay imports), so each worker starts
 * with plain Node: through tsx a start took 30-60 s of a loaded machine, which bounded the kills.
 * One bundle per pass (named by the parent's pid), so passes run side by side.
 */
function bundleWorker(): string {
  const script = fileURLToPath(import.meta.url);
  const outfile = join(script, "..", ".out", `chaos-worker-${process.pid}.mjs`);
  buildSync({ entryPoints: [script], bundle: true, platform: "node", format: "esm", packages: "external", keepNames: true, outfile, logLevel: "silent" });
  return outfile;
}

let workerEntry: string | undefined;

/** Every object of `from` put into `to` (a failed S3 pass's store, kept beside its log). */
async function copyStore(from: ObjectStore, to: ObjectStore): Promise<void> {
  for await (const o of from.list("")) {
    const body = await from.get(o.key);
    if (body !== null) await to.put(o.key, body.body);
  }
}

function startWorker(dir: string, runs: number, faultRate: number, seed: number, spec: StoreSpec): ChildProcess {
  workerEntry ??= bundleWorker();
  const rate = process.env.SUBMIT_RATE ?? "4";
  return spawn(process.execPath, [workerEntry, "--worker", dir, String(runs), String(faultRate), String(seed), rate, JSON.stringify(spec)], {
    stdio: ["ignore", "ignore", "inherit"],
  });
}

const exited = (c: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) resolve();
    else c.once("exit", () => resolve());
  });

async function parent(): Promise<void> {
  const runs = Number(process.env.RUNS ?? 1000);
  const kills = Number(process.env.KILLS ?? 50);
  const faultRate = Number(process.env.FAULT_RATE ?? 0.05);
  const seed = Number(process.env.SEED ?? 1);
  const timeoutMs = Number(process.env.TIMEOUT_S ?? 1800) * 1000;
  const dir = await mkdtemp(join(tmpdir(), "taquba-chaos-"));
  const logFile = join(dir, "events.log");
  const s3 = process.env.STORE === "s3" ? await startS3Server() : undefined;
  const spec: StoreSpec = s3 === undefined ? { kind: "local", dir: join(dir, "store") } : { kind: "s3", bucket: s3.bucket, clientConfig: s3.clientConfig };
  const load0 = loadavg();
  const t0 = Date.now();
  console.log(
    `chaos: ${runs} runs x 5 steps, ${kills} SIGKILLs, ${faultRate * 100}% store faults (engine and memo), ${s3 === undefined ? "LocalStore" : "S3Store over s3rver"}, ` +
      `${MAX_ATTEMPTS} attempts per step; load average ${load0.map((x) => x.toFixed(2)).join(" ")}`,
  );

  let child = startWorker(dir, runs, faultRate, seed, spec);
  let killed = 0;
  let selfExits = 0;
  let stopping = false;
  const watch = (c: ChildProcess) =>
    c.once("exit", (code, signal) => {
      if (stopping || signal === "SIGKILL") return;
      // A worker that stopped by itself (a poisoned engine): restart it like a supervisor would.
      selfExits++;
      console.log(`  worker ${c.pid} exited by itself (code ${code}); restarting`);
      child = startWorker(dir, runs, faultRate, seed, spec);
      watch(child);
    });
  watch(child);

  const terminatedIds = () =>
    new Set(
      readLog(logFile)
        .filter((l) => l[0] === "terminal" && l[1]!.endsWith(`.${RESUBMIT}`))
        .map((l) => l[1]!),
    );
  // Worker processes that logged a step of their own: a kill waits for the new worker to have worked,
  // so kills do not fall in a burst on one starting process (each kill inside a step costs that step an attempt).
  const workedPids = () =>
    new Set(
      readLog(logFile)
        .filter((l) => l[0] === "stored")
        .map((l) => l[4]!),
    );
  let done = terminatedIds().size;
  // Kills are spread over the submission period (RUNS / SUBMIT_RATE seconds), each once the
  // current worker has worked a step, then at a random moment up to 2 s later.
  const submitRate = Number(process.env.SUBMIT_RATE ?? 4);
  const killEveryMs = (1000 * runs) / submitRate / (kills + 1);
  let lastRestart = Date.now();
  // Kills end after KILL_FOR_S (or once KILLS were made); the pass ends once every run ended, killed or not.
  const killForMs = Number(process.env.KILL_FOR_S ?? Number.POSITIVE_INFINITY) * 1000;
  while (done < runs && Date.now() - t0 < timeoutMs) {
    await new Promise((r) => setTimeout(r, 100));
    done = terminatedIds().size;
    if (
      killed < kills &&
      Date.now() - t0 < killForMs &&
      Date.now() >= Math.max(t0 + (killed + 1) * killEveryMs, lastRestart + 500) &&
      workedPids().has(String(child.pid))
    ) {
      await new Promise((r) => setTimeout(r, Math.random() * 2000));
      const victim = child;
      victim.kill("SIGKILL");
      await exited(victim);
      killed++;
      child = startWorker(dir, runs, faultRate, seed, spec);
      lastRestart = Date.now();
      watch(child);
    }
  }
  const wallS = (Date.now() - t0) / 1000;
  stopping = true;
  child.kill("SIGTERM");
  await exited(child);

  // Check from durable state, without faults.
  const store = openStore(spec);
  const queue = await Queue.open(store, "chaos", { queueConfigs: STEP_QUEUE_CONFIG });
  const runtime = WorkflowRuntime.builder(
    queue,
    store,
    { runStep: async () => StepOutcome.fail("checking only") },
    { onTermination: async () => undefined },
  ).build();
  const lines = readLog(logFile);
  const ackedGens = [...new Set(lines.filter((l) => l[0] === "submitted").map((l) => l[1]!))];
  // Each run id's latest acknowledged generation is the run its records describe; an earlier one ended
  // before the next was submitted, so its hook's `succeeded` line is what is checked of it.
  const latestGen = new Map<string, number>();
  for (const lid of ackedGens) {
    const [id, gen] = lid.split(".");
    latestGen.set(id!, Math.max(latestGen.get(id!) ?? 0, Number(gen)));
  }
  const endedGens = new Set(lines.filter((l) => l[0] === "terminal" && l[2] === "succeeded").map((l) => l[1]!));
  const acked = [...latestGen.keys()];
  let runsLost = 0;
  let runsFailed = 0;
  let resultsLost = 0;
  const notSucceeded: string[] = [];
  for (const lid of ackedGens) {
    const [id, gen] = lid.split(".");
    if (Number(gen) < latestGen.get(id!)! && !endedGens.has(lid)) runsLost++;
  }
  for (const id of acked) {
    const gen = latestGen.get(id)!;
    const status = await runtime.status(id);
    if (status?.state !== "terminated" || status.status !== "succeeded") {
      if (status?.state === "terminated") runsFailed++;
      else runsLost++;
      if (notSucceeded.length < 3)
        notSucceeded.push(`${id}: ${status?.state === "terminated" ? `${status.status}, ${status.error ?? ""}` : JSON.stringify(status)}`);
      continue;
    }
    const outcome = await runtime.outcome(id);
    let ok = outcome !== null && dec(outcome.result) === expectedResult(id, gen);
    // Steps 0-2 put their memo's value; 3 and 4 what the signal brought (or the timeout) and the run memo's.
    for (let k = 0; k < 3 && ok; k++) ok = dec(await queue.kvGet(`chaos/${id}/${k}`)) === memoValue("abc"[k]!, id, gen);
    for (let k = 3; k < 5 && ok; k++) ok = (await queue.kvGet(`chaos/${id}/${k}`)) !== null;
    if (!ok) resultsLost++;
  }
  // Each step of a succeeded run, and its terminal hook's notification, is one job of the step queue done once,
  // however often a kill put it back; with every run succeeded nothing is left pending, scheduled, claimed or dead.
  // Runs started: the submissions (run id, generation, memo set) whose step 0 computed its memo, which
  // counts once each run a kill made a worker submit again after it landed (its `submitted` line cut).
  const started = new Set(lines.filter((l) => l[0] === "effect" && l[2] === "0").map((l) => `${l[1]} ${l[5]}`)).size;
  const succeeded = acked.length - runsLost - runsFailed;
  const stats = await queue.view().stats("workflow-steps");
  const allSucceeded = succeeded === runs && runsLost === 0 && ackedGens.length === runs * (1 + RESUBMIT);
  // A run that did not succeed had done some of its steps: the model then bounds the count instead.
  const statsWrong = allSucceeded
    ? stats.done !== JOBS_PER_RUN * started || stats.pending + stats.scheduled + stats.claimed + stats.dead !== 0
    : stats.done < JOBS_PER_RUN * succeeded || stats.done > JOBS_PER_RUN * started;
  await queue.close();

  const outcomesByRun = new Map<string, Set<string>>();
  for (const l of lines.filter((l) => l[0] === "terminal")) {
    const s = outcomesByRun.get(l[1]!) ?? new Set<string>();
    s.add(`${l[2]} ${l[3]}`);
    outcomesByRun.set(l[1]!, s);
  }
  const duplicated = [...outcomesByRun.values()].filter((s) => s.size > 1).length;
  const hookCalls = lines.filter((l) => l[0] === "terminal").length;

  // Repeated memoized effects: a second `effect` for one memo key. Explained when its computation's read
  // began before any process had stored the value: an earlier one was killed or its write kept failing, or it
  // still ran (a step whose lease ran out is claimed again beside itself; the chaos steps renew none).
  // Unexplained when the read began after a `stored` line of the key: the value was durable then, so a memo was lost.
  const effects = new Map<string, number>();
  const storedAt = new Map<string, number>();
  const beganAt = new Map<string, number>();
  let repeats = 0;
  let unexplained = 0;
  for (const [i, l] of lines.entries()) {
    const key = `${l[1]} ${l[2]} ${l[3]} ${l[5]}`;
    if (l[0] === "begin") beganAt.set(l[6]!, i);
    if (l[0] === "stored" && !storedAt.has(key)) storedAt.set(key, i);
    if (l[0] !== "effect") continue;
    const seen = effects.get(key) ?? 0;
    effects.set(key, seen + 1);
    if (seen === 0) continue;
    repeats++;
    const stored = storedAt.get(key);
    if (stored !== undefined && (beganAt.get(l[6]!) ?? i) > stored) unexplained++;
  }
  // A memoized value of another submission of the run id: its memo set read by a later run.
  const foreign = lines.filter((l) => l[0] === "stored" && l[6] === "foreign").length;
  const timedOut = new Set(lines.filter((l) => l[0] === "signal" && l[2] === "timeout").map((l) => l[1]));
  const jobsOfStep = new Map<string, Set<string>>();
  for (const l of lines.filter((l) => l[0] === "job")) {
    const step = `${l[1]} ${l[2]} ${l[6]}`;
    (jobsOfStep.get(step) ?? jobsOfStep.set(step, new Set()).get(step)!).add(l[3]!);
  }
  const twice = [...jobsOfStep].filter(([, ids]) => ids.size > 1);
  const load1 = loadavg();
  console.log(
    `  wall ${wallS.toFixed(1)} s; ${done}/${runs} runs ended before the check; ${killed} SIGKILLs; ${selfExits} workers stopped by themselves and were restarted`,
  );
  console.log(
    `  runs submitted (acknowledged): ${acked.length} run ids, ${ackedGens.length} submissions (${RESUBMIT} again after each ended); runs started ${started}`,
  );
  console.log(`  runs lost: ${runsLost}`);
  console.log(`  runs failed: ${runsFailed}${notSucceeded.length > 0 ? ` (e.g. ${notSucceeded.join("; ")})` : ""}`);
  console.log(`  results lost: ${resultsLost}`);
  console.log(`  duplicated terminal outcomes: ${duplicated} (terminal hook calls: ${hookCalls}, at least once)`);
  console.log(
    `  repeated memoized effects: ${repeats} (${repeats - unexplained} whose read began before any process stored the value: a kill or fault inside the step, or the step run again beside itself once its lease ran out; ${unexplained} after)`,
  );
  console.log(`  memo values of another submission of the run id read: ${foreign}`);
  console.log(`  memo keys computed: ${effects.size}; runs whose signal wait timed out (a kill lost the signal before it was sent): ${timedOut.size}`);
  console.log(
    `  step jobs: ${JSON.stringify(stats)} (model: ${allSucceeded ? `done ${JOBS_PER_RUN * started}, nothing else` : `done ${JOBS_PER_RUN * succeeded} to ${JOBS_PER_RUN * started}`})${statsWrong ? " WRONG" : ""}`,
  );
  console.log(
    `  steps run by more than one step job: ${twice.length}${
      twice.length > 0
        ? ` (e.g. ${twice
            .slice(0, 3)
            .map(([step, ids]) => `${step}: ${[...ids].join(", ")}`)
            .join("; ")})`
        : ""
    }`,
  );
  console.log(`  load average at the end: ${load1.map((x) => x.toFixed(2)).join(" ")}`);
  const failed = runsLost + runsFailed + resultsLost + duplicated + unexplained + foreign > 0 || statsWrong;
  // A failed pass keeps its event log and its store to read what happened: an S3 pass's objects are copied
  // into a directory a LocalStore opens (s3rver's own directory goes with the server).
  if (failed && s3 !== undefined) await copyStore(openStore(spec), new LocalStore(join(dir, "store")));
  if (failed) console.log(`  kept for reading: ${dir} (events.log, store/)`);
  else await rm(dir, { recursive: true, force: true });
  if (workerEntry !== undefined) await rm(workerEntry, { force: true });
  await s3?.stop();
  if (failed) process.exitCode = 1;
}

if (process.argv[2] === "--worker") {
  const [, , , dir, runs, faultRate, seed, rate, spec] = process.argv;
  await worker(dir!, Number(runs), Number(faultRate), Number(seed), Number(rate), JSON.parse(spec!) as StoreSpec);
} else {
  await parent();
}
