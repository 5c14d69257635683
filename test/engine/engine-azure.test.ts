/**
 * @module The engine over AzureBlobStore against Azurite on loopback: commits,
 * checkpoints, recovery, fencing and a reader; two writers opening at once;
 * and a writer process killed with SIGKILL mid-commit, repeatedly, whose
 * durable commits must all be recovered with no half batch.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AzureBlobStore, Engine, EngineReader, FencedError, WriteBatch, openStore } from "taquba";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { startAzurite, type TestAzurite } from "../support/azurite.js";
import { testRandom } from "../support/seed.js";
import { scaledForLoad } from "../support/load.js";
import { expectCrashState } from "../support/crash-state.js";

vi.setConfig({ testTimeout: scaledForLoad(180_000) });

const CONTAINER = "engine";
const fixture = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));
let azurite: TestAzurite;
let counter = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  await azurite.createContainer(CONTAINER);
}, 60_000);
afterAll(async () => {
  await azurite?.stop();
});

const enc = (s: string) => new TextEncoder().encode(s);

function makeStore(prefix = `e${++counter}`): AzureBlobStore {
  return new AzureBlobStore({ container: CONTAINER, prefix, account: azurite.account, accountKey: azurite.accountKey, endpoint: azurite.endpoint });
}

describe("engine over Azure Blob Storage (Azurite on loopback)", () => {
  it("commits, checkpoints, recovers, fences and serves a reader", async () => {
    const store = makeStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    await Promise.all(Array.from({ length: 50 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i))))));
    await engine.checkpoint();
    for (let i = 50; i < 60; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i))).delete(`k/${i - 50}`));
    const reader = await EngineReader.open(store);
    expect([...reader.scan()]).toHaveLength(50);

    const second = await Engine.open(store);
    expect([...second.scan({ prefix: "k/" })]).toHaveLength(50);
    await expect(engine.commit(new WriteBatch().put("stale", enc("x")))).rejects.toBeInstanceOf(FencedError);
    await second.commit(new WriteBatch().put("new", enc("y")));
    await reader.refresh();
    expect(reader.has("new")).toBe(true);
    expect(reader.has("stale")).toBe(false);
    await second.close();
    await engine.close();
  });

  it("lets at most one of two writers opening at once commit", async () => {
    for (let round = 0; round < 3; round++) {
      const prefix = `both${++counter}`;
      const opened = await Promise.allSettled([Engine.open(makeStore(prefix)), Engine.open(makeStore(prefix))]);
      const engines = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      expect(engines.length).toBeGreaterThan(0);
      for (const r of opened) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(FencedError);
      const commits = await Promise.allSettled(engines.map((e, i) => e.commit(new WriteBatch().put(`w${i}`, enc("x")))));
      expect(commits.filter((c) => c.status === "fulfilled")).toHaveLength(1);
      for (const c of commits) if (c.status === "rejected") expect(c.reason).toBeInstanceOf(FencedError);
      await Promise.all(engines.map((e) => e.close()));
    }
  });

  it("recovers every durable commit and no half batch after SIGKILLs of a writer process", async () => {
    const base = azurite.endpoint.slice(0, azurite.endpoint.lastIndexOf("/"));
    const prefix = `crash${++counter}`;
    const url = `azure://${azurite.account}/${CONTAINER}/${prefix}?endpoint=${encodeURIComponent(base)}`;
    const allDurable: string[] = [];
    const { int } = testRandom("azure engine crash recovery");
    for (let round = 0; round < 3; round++) {
      const writer = startScript(fixture, [url, `r${round}`, "4"]);
      const target = 10 + int(60);
      await writer.waitFor((lines) => lines.filter((l) => l.startsWith("D ")).length >= target);
      // Real time on purpose: the kill must land at an arbitrary point of the writer's IO.
      await new Promise((r) => setTimeout(r, int(40)));
      await writer.kill();
      expect(backgroundFailures(writer)).toEqual([]);
      allDurable.push(...writer.lines.filter((l) => l.startsWith("D ")).map((l) => l.slice(2)));

      const engine = await Engine.open(openStore(url));
      expectCrashState(engine, allDurable, `r${round}`);
      await engine.close();
    }
    expect(allDurable.length).toBeGreaterThan(30);
  });
});
