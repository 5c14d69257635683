/**
 * @module A real headless browser for tests of web pages: Debian's
 * chromium, installed with apt-get when it is missing (as root), driven
 * through puppeteer-core with a fresh profile. When no browser can be had,
 * `findBrowser` says why, and the test skips with that message.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "puppeteer-core";

const CANDIDATES = [process.env["TAQUBA_TEST_CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter(
  (p): p is string => p !== undefined && p !== "",
);

/** The browser's path, installing Debian's chromium when none is found; or why there is none. */
export function findBrowser(): { path: string } | { missing: string } {
  const found = CANDIDATES.find((p) => existsSync(p));
  if (found !== undefined) return { path: found };
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/apt-get")) {
    return {
      missing: `no chromium at ${CANDIDATES.join(", ")}, and apt-get cannot install one here (needs root and apt); install chromium or set TAQUBA_TEST_CHROMIUM`,
    };
  }
  const install = () =>
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], {
      encoding: "utf8",
      timeout: 600_000,
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  let r = install();
  if (r.status !== 0) {
    // A fresh machine has no package lists yet.
    spawnSync("apt-get", ["update"], { encoding: "utf8", timeout: 600_000 });
    r = install();
  }
  if (r.status === 0 && existsSync("/usr/bin/chromium")) return { path: "/usr/bin/chromium" };
  return { missing: `apt-get install chromium failed: ${(r.stderr || r.stdout || String(r.error)).trim().split("\n").slice(-3).join(" / ")}` };
}

/** Launches the browser headless with a fresh profile; `close` also removes the profile. */
export async function launchBrowser(executablePath: string): Promise<{ browser: Browser; close(): Promise<void> }> {
  const { launch } = await import("puppeteer-core");
  const profile = mkdtempSync(join(tmpdir(), "taquba-chromium-"));
  const browser = await launch({
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${profile}`,
    ],
    defaultViewport: { width: 1280, height: 860 },
  });
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
