/**
 * @module A LocalStore in a process that runs out of file descriptors: a
 * child whose open-file limit the test lowers (prlimit, Linux) makes 200
 * puts at once. A put refused for too many open files is a retryable
 * `StoreUnavailableError` saying to raise the limit or run fewer requests
 * (not to check reachability and credentials), leaves no temporary file
 * and no object; every put that resolved is stored whole.
 */
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalStore } from "taquba";
import { startScript } from "../support/child-script.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const prlimit = (() => {
  if (process.platform !== "linux") return false;
  try {
    execFileSync("prlimit", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const script = join(import.meta.dirname, "fixtures/local-few-files.ts");
const tempDir = useTempDirs("taquba-few-files-");

describe.skipIf(!prlimit)("LocalStore out of file descriptors (prlimit; Linux)", () => {
  it(
    "refuses puts past the open-file limit saying so, leaving no temporary file or object; every resolved put is whole",
    { timeout: loadLimitTimeout(60_000) },
    () =>
      withinLoadLimit(60_000, async () => {
        const dir = await tempDir();
        const child = startScript(script, [dir]);
        await child.waitFor((lines) => lines.some((l) => l.startsWith("ready ")));
        const open = Number(child.lines.find((l) => l.startsWith("ready "))!.split(" ")[1]);
        const limit = String(open + 12);
        execFileSync("prlimit", ["--pid", String(child.pid), `--nofile=${limit}:${limit}`]);
        process.kill(child.pid, "SIGUSR2");
        await child.waitFor((lines) => lines.some((l) => l.startsWith("[")));
        const out = JSON.parse(child.lines.find((l) => l.startsWith("["))!) as string[];
        const refused = out.filter((r) => r !== "ok");
        expect(refused.length, "some puts found no file descriptor").toBeGreaterThan(0);
        expect(out.filter((r) => r === "ok").length, "some puts landed").toBeGreaterThan(0);
        for (const r of refused) {
          expect(r).toMatch(/^StoreUnavailableError: .*EMFILE/);
          expect(r).toContain("too many files open: raise its limit (ulimit -n) or run fewer requests at once");
        }
        await child.exited;
        expect(readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((n) => n.includes("%tmp."))).toEqual([]);
        const store = new LocalStore(dir);
        for (const [i, r] of out.entries()) {
          const got = await store.get(`a/${i}`);
          if (r === "ok") expect(got?.body).toEqual(new Uint8Array(100).fill(i));
          else expect(got, `refused a/${i} is not stored`).toBeNull();
        }
      }),
  );
});
