/**
 * @module Every class whose constructor is gated (runtime/internal-construction.ts:
 * a direct `new` is refused) is built by each of its entry points without
 * tripping its gate. The list of gated classes is read from the sources (each
 * `new ConstructionGate("Name", ...)`), so a class gated later without an
 * entry point here fails the first test instead of going unchecked.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  ClientGroup,
  ClientInbox,
  ClientJobGroup,
  createShards,
  Engine,
  EngineReader,
  JobRunner,
  MemoryStore,
  NoopTerminalHook,
  OwnerElection,
  Queue,
  runOwnerElection,
  runShardWorkers,
  Schedules,
  serveClients,
  ShardWorkers,
  StepOutcome,
  TaqubaClient,
  WorkflowDispatcher,
  WorkflowRuntime,
  type StepRunner,
} from "taquba";
import { emailJob } from "../jobs/fixtures.js";
import { until } from "../support/until.js";

const RUNTIME = fileURLToPath(new URL("../../runtime/", import.meta.url));
const quiet = { error: () => undefined };
const echo: StepRunner = { runStep: async (s) => StepOutcome.succeed(s.payload) };

/** The class names of every `new ConstructionGate("Name", ...)` under runtime/. */
async function gatedClasses(): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await readdir(RUNTIME, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const text = await readFile(join(entry.parentPath, entry.name), "utf8");
    for (const m of text.matchAll(/new ConstructionGate\(\s*"([^"]+)"/g)) names.push(m[1]!);
  }
  return names.sort();
}

/** What an entry point built (each checked to be an instance of `cls`, a class whose constructor may be private), and how to let it go. */
type Built = { made: object[]; cls: object; stop(): Promise<void> };

/** Per gated class, each of its entry points, run against a fresh store. */
const ENTRY_POINTS: Record<string, Record<string, () => Promise<Built>>> = {
  Engine: {
    "Engine.open": async () => {
      const engine = await Engine.open(new MemoryStore());
      return { made: [engine], cls: Engine, stop: () => engine.close() };
    },
  },
  EngineReader: {
    "EngineReader.open": async () => {
      const store = new MemoryStore();
      await (await Engine.open(store)).close();
      const reader = await EngineReader.open(store);
      return { made: [reader], cls: EngineReader, stop: () => reader.close() };
    },
  },
  Queue: {
    "Queue.open": async () => {
      const queue = await Queue.open(new MemoryStore(), "app");
      return { made: [queue], cls: Queue, stop: () => queue.close() };
    },
  },
  WorkflowRuntime: {
    "WorkflowRuntime.builder().build()": async () => {
      const store = new MemoryStore();
      const queue = await Queue.open(store, "app");
      const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
      return { made: [runtime], cls: WorkflowRuntime, stop: () => queue.close() };
    },
    "JobRunner.builder().build()": async () => {
      const store = new MemoryStore();
      const queue = await Queue.open(store, "app");
      const runner = JobRunner.builder(queue, store).build();
      return { made: [runner.runtime], cls: WorkflowRuntime, stop: () => queue.close() };
    },
  },
  Schedules: {
    "runtime.schedules": async () => {
      const store = new MemoryStore();
      const queue = await Queue.open(store, "app");
      const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
      return { made: [runtime.schedules], cls: Schedules, stop: () => queue.close() };
    },
  },
  JobRunner: {
    "JobRunner.builder().build()": async () => {
      const store = new MemoryStore();
      const queue = await Queue.open(store, "app");
      const runner = JobRunner.builder(queue, store).build();
      return { made: [runner], cls: JobRunner, stop: () => queue.close() };
    },
    "JobRunner.over": async () => {
      const store = new MemoryStore();
      const queue = await Queue.open(store, "app");
      const dispatcher = WorkflowDispatcher.builder()
        .register(emailJob, { run: async (i) => ({ message_id: i.to }) })
        .build();
      const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).build();
      return { made: [JobRunner.over(queue, runtime, dispatcher)], cls: JobRunner, stop: () => queue.close() };
    },
  },
  TaqubaClient: {
    "TaqubaClient.open": async () => {
      const client = await TaqubaClient.open(new MemoryStore(), { name: "app" });
      return { made: [client], cls: TaqubaClient, stop: () => client.close() };
    },
    "TaqubaClient.open of a sharded store": async () => {
      const store = new MemoryStore();
      await createShards(store, "app", 2);
      const client = await TaqubaClient.open(store, { name: "app" });
      return { made: [client], cls: TaqubaClient, stop: () => client.close() };
    },
  },
  ClientGroup: {
    "client.group": async () => {
      const client = await TaqubaClient.open(new MemoryStore(), { name: "app" });
      return { made: [client.group("g")], cls: ClientGroup, stop: () => client.close() };
    },
    "client.jobGroup (the group under it)": async () => {
      const client = await TaqubaClient.open(new MemoryStore(), { name: "app" });
      client.jobGroup("g", emailJob);
      return { made: [], cls: ClientGroup, stop: () => client.close() };
    },
  },
  ClientJobGroup: {
    "client.jobGroup": async () => {
      const client = await TaqubaClient.open(new MemoryStore(), { name: "app" });
      return { made: [client.jobGroup("g", emailJob)], cls: ClientJobGroup, stop: () => client.close() };
    },
  },
  ClientInbox: {
    serveClients: async () => {
      const store = new MemoryStore();
      const queue = await Queue.open(store, "app");
      const runtime = WorkflowRuntime.builder(queue, store, echo, NoopTerminalHook).build();
      const inbox = serveClients(queue, runtime, { store, logger: quiet });
      return {
        made: [inbox],
        cls: ClientInbox,
        stop: async () => {
          await inbox.stop();
          await queue.close();
        },
      };
    },
  },
  OwnerElection: {
    runOwnerElection: async () => {
      let started = false;
      const election = runOwnerElection(new MemoryStore(), "app", {
        processId: "p1",
        logger: quiet,
        start: async () => {
          started = true;
          return { stop: async () => {} };
        },
      });
      await until("the election was won", () => started, 20_000);
      return { made: [election], cls: OwnerElection, stop: () => election.stop() };
    },
    "runShardWorkers (an election per shard)": async () => {
      const store = new MemoryStore();
      await createShards(store, "app", 2);
      const workers = await runShardWorkers(store, "app", { processId: "p1", logger: quiet, start: async () => ({ stop: async () => {} }) });
      await until("every shard owned", () => workers.owned().length === 2, 20_000);
      return { made: [], cls: OwnerElection, stop: () => workers.stop() };
    },
  },
  ShardWorkers: {
    runShardWorkers: async () => {
      const store = new MemoryStore();
      await createShards(store, "app", 2);
      const workers = await runShardWorkers(store, "app", { processId: "p1", logger: quiet, start: async () => ({ stop: async () => {} }) });
      await until("every shard owned", () => workers.owned().length === 2, 20_000);
      return { made: [workers], cls: ShardWorkers, stop: () => workers.stop() };
    },
  },
};

describe("construction gates", () => {
  it("every gated class has its entry points here", async () => {
    const gated = await gatedClasses();
    expect(gated.length).toBeGreaterThan(0);
    expect(Object.keys(ENTRY_POINTS).sort()).toEqual(gated);
  });

  for (const [cls, entries] of Object.entries(ENTRY_POINTS)) {
    for (const [name, build] of Object.entries(entries)) {
      it(`${cls}: ${name} passes the gate`, async () => {
        const built = await build();
        try {
          for (const made of built.made) expect(made).toBeInstanceOf(built.cls);
        } finally {
          await built.stop();
        }
      }, 30_000);
    }
  }
});
