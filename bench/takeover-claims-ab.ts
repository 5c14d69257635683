/**
 * @module Opens of a store whose writer, another process, checkpoints
 * without pause (a checkpoint at every WAL object, two commit loops), by two
 * or more compiled checkouts, round by round in one process so each opens
 * under the same load; the order of the checkouts turns each round. The
 * writer is always the first checkout's, and is waited on until it has
 * published five checkpoints. Reported per open: the outcome (opened, or
 * the error's name), the claims it made (manifest puts), its listings of
 * the manifests, its wall and CPU ms; then per checkout the opens won, the
 * claims, and the medians.
 *
 * `npm run build` in each checkout, then
 * `ROUNDS=10 npx tsx bench/takeover-claims-ab.ts <checkout A> <checkout B>`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ListOptions, ListedObject, PutOptions } from "../runtime/index.js";
import { ForwardingStore } from "../test/support/forwarding-store.js";
import { loadAverageText } from "./support/load-average.js";
import { median } from "./support/percentile.js";
import { loadCheckout } from "./support/step-workload.js";

type Runtime = typeof import("../runtime/index.js");

const self = fileURLToPath(import.meta.url);
const enc = new TextEncoder();

/** The child: the busy writer. Prints `R` after five checkpoints; exits 3 once fenced. */
async function writer(checkout: string, dir: string): Promise<void> {
  const rt = await loadCheckout<Runtime>(checkout);
  const engine = await rt.Engine.open(new rt.LocalStore(dir), { checkpointWalObjects: 1, maxSegmentRuns: 3, flushIntervalMs: 1 });
  let ready = false;
  setInterval(() => {
    if (!ready && engine.stats.checkpoints >= 5) {
      ready = true;
      process.stdout.write("R\n");
    }
  }, 5).unref();
  const loop = async (w: number) => {
    for (let i = 0; ; i++) {
      await engine.commit(new rt.WriteBatch().put(`w${w}/${i}`, enc.encode("x".repeat(64)))).catch(() => process.exit(3));
    }
  };
  await Promise.all([loop(0), loop(1)]);
}

/** `inner` with its manifest puts and listings counted; ranged reads left out (whole objects read). */
class Counted extends ForwardingStore {
  claims = 0;
  manifestListings = 0;
  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key.startsWith("manifest/")) this.claims++;
    return super.put(key, body, opts);
  }
  override list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    if (prefix.startsWith("manifest/")) this.manifestListings++;
    return super.list(prefix, opts);
  }
}

function waitForLine(child: ChildProcess, want: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (l) => {
      if (l === want) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the writer exited (${code}) before "${want}"`)));
  });
}

function exited(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), ms);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

interface Trial {
  outcome: string;
  claims: number;
  listings: number;
  wallMs: number;
  cpuMs: number;
}

async function trial(rt: Runtime, writerCheckout: string): Promise<Trial> {
  const dir = await mkdtemp(join(tmpdir(), "takeover-claims-"));
  const child = spawn(process.execPath, [...process.execArgv, self, "writer", writerCheckout, dir], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    await waitForLine(child, "R");
    const store = new Counted(new rt.LocalStore(dir));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let outcome = "opened";
    try {
      const engine = await rt.Engine.open(store);
      await engine.close();
    } catch (err) {
      outcome = err instanceof Error ? err.name : String(err);
    }
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { outcome, claims: store.claims, listings: store.manifestListings, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    await exited(child, outcomeGraceMs);
    await rm(dir, { recursive: true, force: true });
  }
}

/** How long the fenced writer gets to notice and exit before it is killed. */
const outcomeGraceMs = 20_000;

async function main(): Promise<void> {
  const dirs = process.argv.slice(2);
  if (dirs.length === 0) throw new Error("name one or more built checkouts");
  const rounds = Number(process.env.ROUNDS ?? 10);
  const runtimes = await Promise.all(dirs.map((d) => loadCheckout<Runtime>(d)));
  const results: Trial[][] = dirs.map(() => []);
  console.log(`load before: ${loadAverageText()}`);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? dirs.map((_, i) => i) : dirs.map((_, i) => dirs.length - 1 - i);
    for (const i of order) {
      const t = await trial(runtimes[i]!, dirs[0]!);
      results[i]!.push(t);
      console.log(
        `round ${r} ${dirs[i]}: ${t.outcome}, ${t.claims} claims, ${t.listings} manifest listings, ${t.wallMs.toFixed(0)} ms wall, ${t.cpuMs.toFixed(0)} ms CPU`,
      );
    }
  }
  for (const [i, dir] of dirs.entries()) {
    const ts = results[i]!;
    const won = ts.filter((t) => t.outcome === "opened").length;
    const claims = ts.map((t) => t.claims);
    console.log(
      `${dir}: ${won}/${ts.length} opened; claims per open median ${median(claims)} max ${Math.max(...claims)}; manifest listings median ${median(ts.map((t) => t.listings))}; wall median ${median(ts.map((t) => t.wallMs)).toFixed(0)} ms; CPU median ${median(ts.map((t) => t.cpuMs)).toFixed(0)} ms`,
    );
  }
  console.log(`load after: ${loadAverageText()}`);
}

if (process.argv[2] === "writer") await writer(process.argv[3]!, process.argv[4]!);
else await main();
