/**
 * @module For the child processes of crash tests only: kills the process
 * with SIGKILL from inside a LocalStore put, at a chosen window of it, so
 * a test hits that window on every run instead of by chance. Nothing in the
 * store knows of it: it wraps the `node:fs` calls a LocalStore put makes on
 * the thread-pool path (open the store with `putThread: false`; the put
 * thread makes its calls in a worker), and the store's module sees the
 * wrapped calls through its `node:fs` import.
 *
 * The windows, in the order a put passes them (an O_DSYNC write is on disk
 * when it returns, so "written" is also "synced"):
 * - `before-write`: the temporary file exists, empty;
 * - `torn-write`: half the body written to the temporary file;
 * - `before-link`: the temporary file whole and synced, not yet under its
 *   final name (before `link` for create-if-absent, `rename` otherwise);
 * - `after-link`: under its final name, the directory not yet synced and
 *   the put not yet acknowledged.
 */
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";

export const PUT_WINDOWS = ["before-write", "torn-write", "before-link", "after-link"] as const;
export type PutWindow = (typeof PUT_WINDOWS)[number];

/**
 * Where to die: in the `nth` put (from 1) into the store directory named
 * `dirName` (a key prefix's directory, e.g. `manifest%2F`); a put whose
 * name was taken (a lost create-if-absent race) does not count.
 */
export interface KillInPut {
  window: PutWindow;
  dirName: string;
  nth: number;
}

/** The kill point as the environment variable `TAQUBA_TEST_KILL_IN_PUT` carries it: `<window> <dir-name> <nth>`. */
export const killInPutEnv = (k: KillInPut): string => `${k.window} ${k.dirName} ${k.nth}`;

/** Reads `TAQUBA_TEST_KILL_IN_PUT`; undefined when unset. */
export function killInPutFromEnv(value = process.env.TAQUBA_TEST_KILL_IN_PUT): KillInPut | undefined {
  if (value === undefined || value === "") return undefined;
  const [window, dirName, nth] = value.split(" ");
  if (!PUT_WINDOWS.includes(window as PutWindow) || !dirName || !(Number(nth) >= 1)) throw new Error(`bad TAQUBA_TEST_KILL_IN_PUT: ${value}`);
  return { window: window as PutWindow, dirName, nth: Number(nth) };
}

/**
 * Arms the kill. Before dying it writes `K <window> <temporary file>` to
 * stdout synchronously, so the test knows the window was reached and which
 * file the put left.
 */
export function armKillInPut(k: KillInPut): void {
  const real = { openSync: fs.openSync, write: fs.write, linkSync: fs.linkSync, renameSync: fs.renameSync, writeSync: fs.writeSync };
  let seen = 0;
  // The temporary file of the chosen put, and its descriptor once opened.
  let temp: string | undefined;
  let tempFd: number | undefined;
  const die = (): never => {
    real.writeSync(1, `K ${k.window} ${temp}\n`);
    process.kill(process.pid, "SIGKILL");
    throw new Error("unreachable: SIGKILL did not end the process");
  };
  const patched = {
    openSync(file: fs.PathLike, ...rest: unknown[]): number {
      const fd = (real.openSync as (...a: unknown[]) => number)(file, ...rest);
      const name = String(file);
      if (temp === undefined && path.basename(name).startsWith("%tmp.") && path.basename(path.dirname(name)) === k.dirName && ++seen === k.nth) {
        temp = name;
        tempFd = fd;
      }
      return fd;
    },
    write(fd: number, ...rest: unknown[]): void {
      if (fd === tempFd && k.window === "before-write") die();
      if (fd === tempFd && k.window === "torn-write") {
        const [buffer, offset, length, position] = rest as [Uint8Array, number, number, number];
        real.writeSync(fd, buffer, offset, Math.max(1, length >> 1), position);
        die();
      }
      (real.write as (...a: unknown[]) => void)(fd, ...rest);
    },
    linkSync(from: fs.PathLike, to: fs.PathLike): void {
      moveIntoPlace(from, () => real.linkSync(from, to));
    },
    renameSync(from: fs.PathLike, to: fs.PathLike): void {
      moveIntoPlace(from, () => real.renameSync(from, to));
    },
  };
  function moveIntoPlace(from: fs.PathLike, move: () => void): void {
    const chosen = temp !== undefined && String(from) === temp;
    if (chosen && k.window === "before-link") die();
    try {
      move();
    } catch (err) {
      // The name was taken (a create-if-absent put that lost a race): the next put into the directory is
      // chosen instead, so the kill lands in a put that reaches its window.
      if (chosen) {
        temp = undefined;
        tempFd = undefined;
        seen--;
      }
      throw err;
    }
    if (chosen && k.window === "after-link") die();
  }
  Object.assign(fs, patched);
  // ESM imports of `node:fs` see the wrapped calls from now on.
  syncBuiltinESMExports();
}

/** Arms the kill named by `TAQUBA_TEST_KILL_IN_PUT`, if any. */
export function armKillInPutFromEnv(): void {
  const k = killInPutFromEnv();
  if (k !== undefined) armKillInPut(k);
}
