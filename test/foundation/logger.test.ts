/**
 * @module A logger given as an option is best effort: a level method that
 * fails, however it fails, never fails or crashes what logs. An async
 * method whose promise rejects (a transport that went away) left an
 * unhandled rejection, which ends a Node process by default.
 */
import { describe, expect, it } from "vitest";
import { readLogger } from "../../runtime/logger.js";
import { turns, unhandledRejections } from "../support/unhandled-rejections.js";

const unhandled = unhandledRejections();

describe("readLogger: a level method that fails", () => {
  it("an async method that rejects, a thenable whose then throws or is a getter that throws: the call returns, nothing is left unhandled", async () => {
    unhandled.watch();
    let calls = 0;
    const logger = readLogger("Options.logger", {
      error: async () => {
        calls++;
        throw new Error("the transport went away");
      },
      warn: () => {
        calls++;
        return {
          // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
          then() {
            throw new Error("then threw");
          },
        };
      },
      info: () => {
        calls++;
        // biome-ignore lint/suspicious/noThenProperty: a hostile thenable on purpose
        return Object.defineProperty({}, "then", {
          get() {
            throw new Error("then getter threw");
          },
        });
      },
      debug: () => {
        calls++;
        return Promise.reject(new Error("rejected at once"));
      },
    })!;
    for (const level of ["error", "warn", "info", "debug"] as const) expect(logger[level]({ n: 1 }, "a message")).toBeUndefined();
    await turns(5);
    expect(calls).toBe(4);
    expect(unhandled.seen).toEqual([]);
  });
});
