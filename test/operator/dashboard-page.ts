/**
 * @module Driving the dashboard in tests: the `taquba dashboard` bin in its
 * own process, and waits on the page in a headless browser.
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "puppeteer-core";
import { expectNoUnexpectedFailures } from "../support/background-errors.js";
import { FailureMonitor } from "../support/failure-monitor.js";
import { spawnTied } from "../support/tied-children.js";

const BIN = join(fileURLToPath(new URL("../../", import.meta.url)), "codegen", "bin.js");

/** A running `taquba dashboard`: its process, the address it printed, and its stderr so far. */
export interface DashboardProcess {
  readonly child: ChildProcess;
  readonly url: string;
  stderr(): string;
  /**
   * Throws when the dashboard threw past its own error handling, left a
   * promise rejected unhandled or raised a process warning so far (reported
   * on a file: its stderr is the operator's), naming each with its stack.
   */
  expectNoFailures(): void;
}

/** Starts `taquba dashboard`, tied to the test (or file) that starts it, and resolves once it printed its address. */
export function startDashboardProcess(args: readonly string[]): Promise<DashboardProcess> {
  const monitor = new FailureMonitor();
  const child = spawnTied(process.execPath, [...monitor.execArgv, BIN, "dashboard", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: monitor.env({ ...process.env, NO_COLOR: "1" }),
  });
  let out = "";
  let err = "";
  const stderr = () => err;
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  // Read at its end, so a test that never checks still leaves no report file behind.
  let ended: ReturnType<FailureMonitor["report"]> | undefined;
  child.once("exit", () => {
    ended = monitor.report(stderr);
    monitor.dispose();
  });
  const expectNoFailures = () => expectNoUnexpectedFailures("the dashboard process", ended ?? monitor.report(stderr));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /at (http:\/\/\S+)/.exec(out);
      if (m !== null) resolve({ child, url: m[1]!, stderr, expectNoFailures });
    });
    child.on("exit", (code) => reject(new Error(`taquba dashboard exited with ${code}: ${err}`)));
  });
}

export async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

/**
 * Waits until `expression` (run in the page) is true, with the page's text
 * in the failure message. Strings, not functions: they run in the page,
 * and this project type-checks without DOM types.
 */
export async function waitUntil(page: Page, expression: string, timeout = 60_000): Promise<void> {
  try {
    await page.waitForFunction(expression, { timeout, polling: 100 });
  } catch (e) {
    const body = await page.evaluate("document.body.innerText").catch(() => "?");
    throw new Error(`never true: ${expression}; the page shows:\n${String(body)}`, { cause: e });
  }
}

/** Clicks `selector`, again if a live refresh replaced the element between finding and clicking it. */
export async function click(page: Page, selector: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await page.waitForSelector(selector, { timeout: 30_000 });
      await page.click(selector);
      return;
    } catch (e) {
      if (i >= 5 || !String(e).includes("detached")) throw e;
    }
  }
}

/** Waits until an element matching `selector` contains `text`. */
export function waitText(page: Page, selector: string, text: string, timeout = 60_000): Promise<void> {
  return waitUntil(
    page,
    `[...document.querySelectorAll(${JSON.stringify(selector)})].some((e) => (e.textContent ?? "").includes(${JSON.stringify(text)}))`,
    timeout,
  );
}

/** Accepts every question the page asks (`confirm`, `alert`), and returns the list their messages are added to, in order. */
export function acceptDialogs(page: Page): string[] {
  const dialogs: string[] = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.accept();
  });
  return dialogs;
}
