/**
 * A run's submit, steps, end, wait and outcome make no function bound to a
 * name in the runtime's modules (the workflow's, the queue's, the
 * engine's), as the sources run where esbuild keeps names (tsx, the peers'
 * side-by-side harness): there each such function costs a definition of its
 * name (`Object.defineProperty`) every time it is made, several times the
 * cost of making it.
 *
 * The runtime is bundled with esbuild's `keepNames` (as tsx transforms it),
 * with its source map, and run in a child process with source maps on; the
 * child counts each name defined on a function while runs go, by the source
 * file of the code that made the function. A probe bundled with the runtime
 * makes one such function while the child counts, so a count of none is
 * one the child could have seen. The child also takes the step path's rare
 * turns while it counts: a claim whose payload object is gone (the job is
 * dead-lettered) and a scan of an engine whose entries lie in checkpointed
 * runs beside its memtable.
 */
import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { buildSync } from "esbuild";
import { describe, expect, it } from "vitest";
import { HEAVY_TEST_MS } from "../support/load.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The child: counts names defined on functions during RUNS runs of two steps each (after one untimed), by the making file. */
const CHILD = `
const define = Object.defineProperty;
let counting = false;
const sites = {};
Object.defineProperty = (o, p, a) => {
  if (counting && p === "name" && typeof o === "function") {
    const frames = (new Error().stack ?? "").split("\\n").slice(2);
    const own = frames.find((l) => l.includes("/runtime/"));
    const m = own?.match(/\\/(runtime\\/[^:]+)/);
    const site = m ? m[1] : "(elsewhere)";
    // The dead-letter wakes the queue's maintenance loop: background work beside the claim, not the claim's own.
    if (!(counting === "rare" && frames.some((l) => l.includes("MaintenanceLoop.")))) sites[site] = (sites[site] ?? 0) + 1;
  }
  return define(o, p, a);
};
const T = await import(process.argv[2]);
const RUNS = Number(process.argv[3]);
const enc = new TextEncoder();
const runner = {
  async runStep(step) {
    return step.payload.length === 0 ? T.StepOutcome.continueNow(enc.encode("1")) : T.StepOutcome.succeed(enc.encode("done"));
  },
};
// The step path's rare turns, set up before counting: a claim whose payload object is gone, a scan over checkpointed runs.
const rareStore = new T.MemoryStore();
const rareQueue = await T.Queue.open(rareStore, "rare", { payloadOffloadBytes: 8 });
await rareQueue.enqueue("work", new Uint8Array(64));
for await (const o of rareStore.list("rare/payloads/")) await rareStore.delete(o.key);
const engineStore = new T.MemoryStore();
const first = await T.Engine.open(engineStore);
await first.commit(new T.WriteBatch().put("a/1", enc.encode("1")).put("a/3", enc.encode("3")));
await first.checkpoint();
await first.close();
// Opened again: the checkpointed entries are a run beside the memtable.
const engine = await T.Engine.open(engineStore);
await engine.commit(new T.WriteBatch().put("a/2", enc.encode("2")));
counting = "rare";
const claimed = await rareQueue.claimBatch("work", 4);
const scanned = [...engine.scan({ prefix: "a/" })].length + [...engine.scan({ prefix: "a/", reverse: true })].length;
counting = false;
if (claimed.length !== 0 || scanned !== 6) throw new Error("rare paths: claimed " + claimed.length + ", scanned " + scanned);
await rareQueue.close();
await engine.close();
const store = new T.MemoryStore();
const queue = await T.Queue.open(store, "names");
const runtime = T.WorkflowRuntime.builder(queue, store, runner, T.NoopTerminalHook).build();
const handle = runtime.spawn();
const one = async () => {
  const { runId } = await runtime.submit({ input: new Uint8Array(0) });
  await runtime.wait(runId);
  const o = await runtime.outcome(runId);
  if (o?.status !== "succeeded") throw new Error("run " + runId + " did not succeed");
};
await one();
counting = true;
for (let i = 0; i < RUNS; i++) await one();
T.madeNamedForProbe();
counting = false;
await handle.shutdown();
await queue.close();
process.stdout.write(JSON.stringify(sites));
`;

describe("function names defined on a run's path where esbuild keeps names", () => {
  it(
    "a run's submit, steps, end, wait and outcome define none in the runtime's modules, nor a claim of an unreadable payload or a scan over runs",
    async () => {
      const dir = join(ROOT, ".tmp", "keep-names", String(process.pid));
      mkdirSync(dir, { recursive: true });
      try {
        const bundle = join(dir, "runtime.mjs");
        buildSync({
          // The runtime, and a probe that makes one function bound to a name each call.
          stdin: {
            contents: 'export * from "./runtime/index.ts";\nexport function madeNamedForProbe() {\n  const made = () => 0;\n  return made;\n}\n',
            resolveDir: ROOT,
            sourcefile: "runtime/name-probe.ts",
            loader: "ts",
          },
          bundle: true,
          platform: "node",
          format: "esm",
          // Inside the repository, so its package imports resolve from node_modules.
          packages: "external",
          keepNames: true,
          sourcemap: "inline",
          outfile: bundle,
          logLevel: "silent",
        });
        const child = join(dir, "child.mjs");
        writeFileSync(child, CHILD);
        const runs = 20;
        const { stdout } = await promisify(execFile)(process.execPath, ["--enable-source-maps", child, pathToFileURL(bundle).href, String(runs)], {
          cwd: ROOT,
          timeout: HEAVY_TEST_MS,
        });
        const sites = JSON.parse(stdout) as Record<string, number>;
        // The count is by what it measures: the probe's one name, made while the child counted, was seen.
        expect(sites["runtime/name-probe.ts"]).toBe(1);
        const runPath = Object.entries(sites).filter(([site]) => site !== "runtime/name-probe.ts");
        expect(runPath).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    HEAVY_TEST_MS,
  );
});
