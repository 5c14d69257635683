/**
 * @module Promise-returning public methods report bad arguments by
 * rejecting, never by throwing at the call: a caller writing
 * `x.method(a).catch(handle)` or `Promise.all([...])` would otherwise see
 * the error escape past its handler.
 *
 * Which methods return a promise is read from the source (an `async`
 * method, or one whose declared return type is a `Promise`), so a method
 * added later is covered without listing it here. Each is called on a live
 * instance with arguments of every wrong kind.
 */
import { fileURLToPath } from "node:url";
import { Project } from "ts-morph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Engine,
  EngineReader,
  LocalStore,
  MemoryStore,
  NoopTerminalHook,
  Queue,
  QueueReader,
  TaqubaClient,
  WorkflowRuntime,
  JobRunner,
  type ObjectStore,
} from "taquba";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appRunner, openOwner, STEP_QUEUE, STORE_NAME, type OwnerApp } from "./fixtures/app.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The public methods of class `name` in `file` that return a promise. */
function promiseMethods(file: string, name: string): string[] {
  const project = new Project({ skipAddingFilesFromTsConfig: true, skipFileDependencyResolution: true });
  const cls = project.addSourceFileAtPath(`${root}${file}`).getClassOrThrow(name);
  return (
    cls
      .getMethods()
      .filter((m) => !m.isStatic() && m.getScope() !== "private" && m.getScope() !== "protected" && !m.getName().startsWith("#"))
      // An async generator (`results()`) returns an iterator, whose first `next()` rejects.
      .filter((m) => !m.isGenerator())
      // `Promise<void> | undefined` (Engine.warm: undefined when nothing needs loading) is not a promise-only method.
      .filter((m) => m.isAsync() || [m, ...m.getOverloads()].some((d) => /^Promise<.*>$/s.test(d.getReturnTypeNode()?.getText() ?? "")))
      .map((m) => m.getName())
  );
}

/** Methods that end or run the instance: called with bad arguments they would stop the others' checks (their own checks are tested beside them). */
const LIFECYCLE = new Set(["close", "stop", "run", "drain"]);

const BAD_ARGUMENTS: readonly (readonly unknown[])[] = [
  [],
  [Symbol("bad"), Symbol("bad"), Symbol("bad"), Symbol("bad")],
  [null, Number.NaN, -1, null],
  [{}, "", Number.POSITIVE_INFINITY, 5n],
  ["bad id!", { timeoutMs: "5" }, [], () => {}],
];

const show = (args: readonly unknown[]): string =>
  args.map((a) => (typeof a === "symbol" ? "Symbol" : typeof a === "bigint" ? `${a}n` : (JSON.stringify(a) ?? String(a)))).join(", ");

/** The calls of `methods` on `target` that threw at the call or returned no promise. */
async function synchronousRefusals(label: string, target: object, methods: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  const settling: Promise<unknown>[] = [];
  for (const m of methods) {
    // `[Symbol.asyncDispose]` is close under another name.
    if (LIFECYCLE.has(m) || m.startsWith("[Symbol.")) continue;
    const fn = (target as Record<string, unknown>)[m];
    if (typeof fn !== "function") {
      found.push(`${label}.${m} is not a method of the instance`);
      continue;
    }
    for (const args of BAD_ARGUMENTS) {
      let result: unknown;
      try {
        result = Reflect.apply(fn, target, args);
      } catch (err) {
        found.push(`${label}.${m}(${show(args)}) threw at the call: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      if (!(result instanceof Promise)) found.push(`${label}.${m}(${show(args)}) returned ${typeof result}, not a promise`);
      // Settled or not, it may not go unhandled: a bad call's rejection is what is expected.
      else settling.push(result.catch(() => undefined));
    }
  }
  // The calls are not awaited to their ends (a wait may go on until close); only that none threw.
  void Promise.allSettled(settling);
  return found;
}

describe("Promise-returning methods reject on bad arguments instead of throwing at the call", () => {
  let store: ObjectStore;
  let owner: OwnerApp;
  let client: TaqubaClient;
  let reader: QueueReader;
  let jobQueue: Queue;
  let jobs: JobRunner;
  let engine: Engine;
  let engineReader: EngineReader;
  let dir: string;

  beforeAll(async () => {
    store = new MemoryStore();
    owner = await openOwner(store);
    client = await TaqubaClient.open(store, { name: STORE_NAME, queueName: STEP_QUEUE, timeoutMs: 200 });
    reader = await QueueReader.open(store, STORE_NAME);
    jobQueue = await Queue.open(store, "jobs");
    jobs = JobRunner.builder(jobQueue, store).build();
    engine = await Engine.open(store, { prefix: "raw/" });
    engineReader = await EngineReader.open(store, { prefix: "raw/" });
    dir = await mkdtemp(join(tmpdir(), "taquba-promise-methods-"));
  });

  afterAll(async () => {
    await client.close();
    await jobs.close();
    await jobQueue.close();
    await owner.stop();
    await engine.close();
    await engineReader.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("finds the methods it checks", () => {
    // A renamed file or class would otherwise leave nothing to check.
    expect(promiseMethods("runtime/client/taquba-client.ts", "TaqubaClient")).toEqual(
      expect.arrayContaining(["submit", "wait", "waitTimeout", "backfillSchedule"]),
    );
    expect(promiseMethods("runtime/queue/queue.ts", "Queue")).toEqual(expect.arrayContaining(["enqueue", "claimBatch", "waitForCompletion", "runMaintenance"]));
  });

  it.each([
    ["TaqubaClient", "runtime/client/taquba-client.ts", () => client],
    ["Queue", "runtime/queue/queue.ts", () => owner.queue],
    ["QueueReader", "runtime/queue/reader.ts", () => reader],
    ["WorkflowRuntime", "runtime/workflow/workflow-runtime.ts", () => owner.runtime],
    ["WorkflowView", "runtime/workflow/runs/workflow-view.ts", () => owner.runtime.view()],
    ["Schedules", "runtime/workflow/schedules/schedules.ts", () => owner.runtime.schedules],
    ["JobRunner", "runtime/typed/job-runner.ts", () => jobs],
    ["RunGroup", "runtime/workflow/groups/run-group.ts", () => owner.runtime.group("g")],
    ["JobGroup", "runtime/jobs/job-group.ts", () => jobs.group("g")],
    ["ClientGroup", "runtime/client/client-group.ts", () => client.group("g")],
    ["Engine", "runtime/engine/engine.ts", () => engine],
    ["EngineReader", "runtime/engine/engine-reader.ts", () => engineReader],
    ["MemoStore", "runtime/workflow/memo/memo.ts", () => owner.runtime.memoStore],
    ["MemoryStore", "runtime/store/memory-store.ts", () => new MemoryStore()],
    ["LocalStore", "runtime/store/local-store.ts", () => new LocalStore(dir)],
  ] as const)("%s", async (name, file, instance) => {
    expect(await synchronousRefusals(name, instance(), promiseMethods(file, name))).toEqual([]);
  });

  it("a closed queue's maintenance rejects rather than throws", async () => {
    const q = await Queue.open(new MemoryStore(), "closed");
    await q.close();
    let result: Promise<void> | undefined;
    expect(() => {
      result = q.runMaintenance();
    }).not.toThrow();
    await expect(result).rejects.toThrow(/closed/);
  });

  it("a runtime over a closed queue and a fresh one still answer by promise", async () => {
    const q = await Queue.open(new MemoryStore(), "rt");
    const rt = WorkflowRuntime.builder(q, store, appRunner, NoopTerminalHook).queueName(STEP_QUEUE).build();
    await rt.close();
    await q.close();
    expect(await synchronousRefusals("WorkflowRuntime (closed)", rt, promiseMethods("runtime/workflow/workflow-runtime.ts", "WorkflowRuntime"))).toEqual([]);
  });
});
