/**
 * @module The suggestion a refused option field carries: the option it most
 * likely meant, only when one is clearly closest, and never a slow compare of
 * an absurd key.
 */
import { describe, expect, it } from "vitest";
import { checkKnownFields, refuseUnknownFields } from "../../runtime/option-values.js";
import { ValidationError } from "taquba";
import { cpuTimed } from "../support/cpu-time.js";

const KEYS = ["timeoutMs", "pollIntervalMs", "name", "queueName", "limit", "cursor"] as const;

function issuesOf(given: object): string[] {
  const problems: string[] = [];
  checkKnownFields(given, KEYS, "O.", problems);
  return problems;
}

const suggestion = (issue: string): string | undefined => /; did you mean (\w+)\?$/.exec(issue)?.[1];

describe("a refused option field suggests the option it most likely meant", () => {
  it.each([
    ["timeoutMS", "timeoutMs"], // case only
    ["TIMEOUTMS", "timeoutMs"],
    ["timoutMs", "timeoutMs"], // one left out
    ["tiemoutMs", "timeoutMs"], // two swapped
    ["pollIntervalMillis", undefined], // too far
    ["queuname", "queueName"],
    ["nam", "name"], // short names allow one edit
    ["nm", undefined], // two edits from a short name
    ["limt", "limit"],
    ["tenant", undefined],
  ])("%s -> %s", (field, near) => {
    const [issue] = issuesOf({ [field]: 1 });
    expect(issue).toMatch(new RegExp(`^O\\.${field} is not an option \\(misspelt\\?\\); the options are ${KEYS.join(", ")}`));
    expect(suggestion(issue!)).toBe(near);
  });

  it("suggests nothing when two options are as close", () => {
    const problems: string[] = [];
    checkKnownFields({ ab: 1 }, ["abc", "abd"], "", problems);
    expect(problems).toEqual(["ab is not an option (misspelt?); the options are abc, abd"]);
  });

  it("shows an odd or huge key quoted and cut, and compares no huge key", () => {
    const huge = "t".repeat(2_000_000);
    // CPU time, not wall time: on busy cores the wall clock also counts the moments this process was not run.
    const given = { [huge]: 1 };
    const { result: issues, cpuMs } = cpuTimed(() => issuesOf(given));
    const [issue] = issues;
    // A 2,000,000 by 9 table for each option took 0.76-1.1 s of CPU; with none made it takes under 1 ms.
    expect(cpuMs).toBeLessThan(300);
    expect(issue).toBe(`O.${JSON.stringify(`${"t".repeat(64)}...`)} is not an option (misspelt?); the options are ${KEYS.join(", ")}`);
    expect(issuesOf({ "": 1, "a b": 2 })).toEqual([
      `O."" is not an option (misspelt?); the options are ${KEYS.join(", ")}`,
      `O."a b" is not an option (misspelt?); the options are ${KEYS.join(", ")}`,
    ]);
  });

  it("an object whose fields cannot be listed is named without the path's trailing dot", () => {
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("boom");
        },
      },
    );
    expect(issuesOf(hostile)).toEqual(["listing the fields of O threw: boom"]);
  });

  it("refuseUnknownFields throws one ValidationError listing every such field, and nothing for known ones", () => {
    expect(() => refuseUnknownFields({ limit: 1, cursor: "c" }, KEYS, "O.", "O")).not.toThrow();
    const err = (() => {
      try {
        refuseUnknownFields({ limt: 1, cursr: "c" }, KEYS, "O.", "O");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message.split("\n")[0]).toBe("O has a field that is not an option:");
    expect((err as ValidationError).issues.map(suggestion)).toEqual(["limit", "cursor"]);
  });
});
