/**
 * @module A hostile `onBackgroundError`: one that throws, or is async and
 * rejects, is called when a background checkpoint fails. Its own failure
 * must not end the process (an unhandled rejection does, by default) nor
 * stop the engine: commits go on, and the next checkpoint once the store
 * works again covers them.
 */
import { inspect } from "node:util";
import { describe, expect, it, vi } from "vitest";
import { Engine, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { turns, unhandledRejections } from "../support/unhandled-rejections.js";

const unhandled = unhandledRejections();

const hostile: [string, (calls: { n: number }) => NonNullable<EngineOptions["onBackgroundError"]>][] = [
  [
    "throws",
    (calls) => () => {
      calls.n++;
      throw new Error("the handler itself failed");
    },
  ],
  [
    "is async and rejects",
    (calls) => async () => {
      calls.n++;
      throw new Error("the handler itself failed");
    },
  ],
  [
    "throws a value that cannot be shown (console.warn throws on it)",
    (calls) => () => {
      calls.n++;
      throw unshowable();
    },
  ],
  [
    "is async and rejects with a value that cannot be shown",
    (calls) => async () => {
      calls.n++;
      throw unshowable();
    },
  ],
];

/** An error whose inspection throws: `console.warn` (which inspects it) throws in turn. */
function unshowable(): object {
  return {
    [inspect.custom]() {
      throw new Error("cannot be inspected");
    },
  };
}

describe("onBackgroundError that fails itself", () => {
  for (const [name, make] of hostile) {
    it(`a handler that ${name}: no unhandled rejection, commits go on, the next checkpoint covers them`, async () => {
      unhandled.watch();
      const inner = new MemoryStore();
      let broken = true;
      const store = failWhen(inner, (call, key) => (broken && call === "put" && key.startsWith("seg/") ? new Error("disk on fire") : undefined));
      const calls = { n: 0 };
      const engine = await Engine.open(store, {
        checkpointWalObjects: 1,
        checkpointWalBytes: 0,
        retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
        onBackgroundError: make(calls),
      });
      for (let i = 0; i < 6; i++) {
        await engine.commit(new WriteBatch().put(`k/${i}`, new Uint8Array([i])));
        await turns(5);
      }
      for (let i = 0; i < 200 && calls.n === 0; i++) await turns(1);
      expect(calls.n, "the handler was called").toBeGreaterThan(0);
      await turns(20);
      expect(unhandled.seen).toEqual([]);
      broken = false;
      await engine.commit(new WriteBatch().put("k/last", new Uint8Array([9])));
      await engine.checkpoint();
      await engine.close();
      const reopened = await Engine.open(inner);
      expect([...reopened.scan({ prefix: "k/" })].map(([k]) => k)).toEqual(["k/0", "k/1", "k/2", "k/3", "k/4", "k/5", "k/last"]);
      await reopened.close();
    });
  }
});

describe("the default onBackgroundError", () => {
  it("warns of a store failure that cannot be inspected by its text: no throw into the engine, no unhandled rejection", async () => {
    unhandled.watch();
    const warned: unknown[][] = [];
    const warn = vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => {
      // Inspect as console.warn does, so a value that cannot be shown throws here as it would there.
      warned.push(args.map((a) => (typeof a === "string" ? a : inspect(a))));
    });
    try {
      const inner = new MemoryStore();
      let broken = true;
      const failure = Object.assign(new Error("disk on fire"), unshowable());
      const store = failWhen(inner, (call, key) => (broken && call === "put" && key.startsWith("seg/") ? failure : undefined));
      const engine = await Engine.open(store, { checkpointWalObjects: 1, checkpointWalBytes: 0, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
      for (let i = 0; i < 6; i++) {
        await engine.commit(new WriteBatch().put(`k/${i}`, new Uint8Array([i])));
        await turns(5);
      }
      for (let i = 0; i < 200 && warned.length === 0; i++) await turns(1);
      expect(warned.length, "a warning was written").toBeGreaterThan(0);
      expect(warned[0]!.join(" ")).toContain("disk on fire");
      await turns(20);
      expect(unhandled.seen).toEqual([]);
      broken = false;
      await engine.commit(new WriteBatch().put("k/last", new Uint8Array([9])));
      await engine.checkpoint();
      await engine.close();
    } finally {
      warn.mockRestore();
    }
  });
});
