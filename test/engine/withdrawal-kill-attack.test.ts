/**
 * @module The fenced withdrawal race with a real writer process killed by
 * SIGKILL in it (the in-process tests hold the manifest put instead, see
 * held-manifest-puts.ts). The writer's checkpoint stalls (SIGSTOP) right
 * before its manifest put; a newer writer takes the store over, claims
 * that very number, overwrites and deletes keys, and checkpoints until its
 * garbage collection deleted its claim. Resumed, the stalled put lands
 * under the freed number, listing the old state and segments the newer
 * writer already collected, and the old writer is SIGKILLed at the racy
 * points: with that manifest landed before its listing, or with the
 * manifest withdrawn and its segments not. A new owner then opens: every
 * commit either writer acknowledged is there, no overwritten or deleted
 * key comes back, the newest manifest lists only segments the store
 * holds, and the new owner's checkpoint collects what the killed writer
 * left.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, WriteBatch } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { ChildScenario } from "../support/child-scenario.js";
import { startScript } from "../support/child-script.js";
import { backgroundFailures } from "../support/background-errors.js";
import { missingListedSegments } from "../support/crash-output.js";
import { loadLimitTimeout } from "../support/load.js";
import { keysUnder } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";

const fixture = fileURLToPath(new URL("./fixtures/withdrawal-kill-writer.ts", import.meta.url));
const tempDir = useTempDirs("taquba-withdrawal-kill-");

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
/** Only explicit checkpoints, so the test decides when each manifest is published. */
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
/** A guard against a hang, stretched by the load; each wait on the writer is bounded by its CPU time. */
const SCENARIO_MS = 30_000;
/** The writer's CPU for its start and first commits (about 1 s), or for the resumed put. */
const STEP_CPU_MS = 15_000;

const epochOf = async (store: LocalStore, key: string) => decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!).epoch;

describe.each(["landed", "withdrawn"] as const)("a writer SIGKILLed in the fenced withdrawal race (%s)", (killPoint) => {
  it("loses no acknowledged commit, and neither its manifest nor its overwritten or deleted keys come back", {
    timeout: loadLimitTimeout(SCENARIO_MS),
  }, async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const scenario = ChildScenario.stretchedByLoad(SCENARIO_MS);
    try {
      const a = scenario.track("a", startScript(fixture, [dir, killPoint]));
      // It stops itself right after printing this, before the put.
      await scenario.line("a", a, (l) => l.startsWith("P "), "its stalled manifest put", { cpuMs: STEP_CPU_MS, of: a });
      const stalled = a.lines.find((l) => l.startsWith("P "))!.slice(2);
      const fresh = a.lines.filter((l) => l.startsWith("S ")).map((l) => l.slice(2));
      expect(fresh.length).toBeGreaterThan(0);
      expect(await keysUnder(store, "manifest/")).not.toContain(stalled);
      const aEpoch = await epochOf(store, (await keysUnder(store, "manifest/")).at(-1)!);

      // The newer writer claims the number the stalled put is for, then moves on until its collection deleted that claim.
      const b = await Engine.open(store, MANUAL);
      expect(await epochOf(store, stalled)).toBe(b.epoch);
      await b.commit(new WriteBatch().put("a/1", enc("1b")).delete("a/gone").put("b/0", enc("0")));
      for (let i = 1; i <= 4; i++) {
        await b.commit(new WriteBatch().put(`b/${i}`, enc(String(i))));
        await b.checkpoint();
      }
      expect(await keysUnder(store, "manifest/")).not.toContain(stalled);
      for (const seg of fresh) expect(await keysUnder(store, "seg/")).not.toContain(seg);

      // Resumed: the put lands under the freed number; the writer is killed at the racy point.
      process.kill(a.pid, "SIGCONT");
      const mark = killPoint === "landed" ? "L" : "W";
      await scenario.until(
        `a: its stop at ${killPoint}`,
        () => {
          // A checkpoint that ended passed the racy point without stopping there: fail now, not at the deadline.
          const ended = a.lines.find((l) => l.startsWith("R "));
          if (ended !== undefined) throw new Error(`the stalled checkpoint ended (${ended}) without reaching ${killPoint}: ${a.lines.join(" | ")}`);
          return a.lines.includes(`${mark} ${stalled}`);
        },
        { cpuMs: STEP_CPU_MS, of: a },
      );
      if (killPoint === "landed") expect(await epochOf(store, stalled)).toBe(aEpoch);
      else expect(await keysUnder(store, "manifest/")).not.toContain(stalled);
      expect((await a.kill()).signal).toBe("SIGKILL");
      expect(a.lines.some((l) => l.startsWith("R "))).toBe(false);
      expect(backgroundFailures(a)).toEqual([]);

      // The newer writer acknowledges one more commit; then a new owner opens over what the killed writer left.
      await b.commit(new WriteBatch().put("b/last", enc("last")));
      expect(await missingListedSegments(store)).toEqual([]);
      const c = await Engine.open(new LocalStore(dir), MANUAL);
      await expect(b.commit(new WriteBatch().put("b/fenced", enc("x")))).rejects.toBeInstanceOf(FencedError);
      await b.close();
      const expectState = (e: Engine) => {
        expect(dec(e.get("a/1"))).toBe("1b");
        expect(dec(e.get("a/2"))).toBe("2b");
        expect(dec(e.get("a/3"))).toBe("3");
        expect(e.get("a/gone")).toBeUndefined();
        for (let i = 0; i <= 4; i++) expect(dec(e.get(`b/${i}`))).toBe(String(i));
        expect(dec(e.get("b/last"))).toBe("last");
        expect(e.get("b/fenced")).toBeUndefined();
      };
      expectState(c);
      // Its checkpoint collects the manifest and segments the killed writer left.
      await c.commit(new WriteBatch().put("c/1", enc("1")));
      await c.checkpoint();
      expect(await keysUnder(store, "manifest/")).not.toContain(stalled);
      const segments = await keysUnder(store, "seg/");
      for (const seg of fresh) expect(segments).not.toContain(seg);
      expect(await missingListedSegments(store)).toEqual([]);
      await c.close();

      const reopened = await Engine.open(new LocalStore(dir), MANUAL);
      expectState(reopened);
      expect(dec(reopened.get("c/1"))).toBe("1");
      await reopened.close();
      // What the killed writer reported durable, all checked above.
      expect(a.lines.filter((l) => l.startsWith("D "))).toEqual(["D a/1=1", "D a/2=2", "D a/gone=g", "D a/2=2b", "D a/3=3"]);
    } finally {
      await scenario.stop();
    }
  });
});
