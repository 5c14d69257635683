/**
 * @module The readers of a step job's headers and a polluted
 * `Object.prototype` (a library that merged a parsed `{"__proto__": ...}`):
 * a header name set there is set for every object of the process, so it is
 * no header of any job. The copies these readers hand on (the user's
 * headers for a log record, the flow headers every next step carries)
 * inherit nothing, so a `for...in` over one or a lookup of a name it lacks
 * does not reach the prototype either. Each test pollutes only while the
 * reader runs and restores the prototype in `finally`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { FLOW_CONCURRENCY_KEY_HEADER, FLOW_CONCURRENCY_LIMIT_HEADER, FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER } from "../../runtime/queue/admission.js";
import { HEADER_RUN_ID, HEADER_STEP, HEADER_TERMINAL } from "../../runtime/workflow/records/reserved.js";
import { flowHeaders, flowHeadersOf, userHeadersOf, withCurrentLimit } from "../../runtime/workflow/runs/submit.js";
import { withPolluted } from "../support/polluted-prototype.js";

/** Every name a `for...in` over `o` visits, own or inherited, with its value, read while still polluted. */
function visited(o: object): Record<string, unknown> {
  const seen: Record<string, unknown> = {};
  for (const k in o) seen[k] = (o as Record<string, unknown>)[k];
  return seen;
}

const POLLUTION = {
  tenant: "evil",
  [HEADER_TERMINAL]: "1",
  [FLOW_RULE_HEADER]: "evil-rule",
  [FLOW_CONCURRENCY_KEY_HEADER]: "evil-key",
  [FLOW_CONCURRENCY_LIMIT_HEADER]: "1",
};

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe("a step job's headers under a polluted Object.prototype", () => {
  it("userHeadersOf: the job's own user headers only, in a copy that inherits none", () => {
    const job = { region: "eu", [HEADER_RUN_ID]: "r", [HEADER_STEP]: "2" };
    const { keys, tenant, seen } = withPolluted(POLLUTION, () => {
      const users = userHeadersOf(job);
      return { keys: Object.keys(users), tenant: users.tenant, seen: visited(users) };
    });
    expect(keys).toEqual(["region"]);
    expect(tenant).toBeUndefined();
    expect(seen).toEqual({ region: "eu" });
  });

  it("userHeadersOf: a `__proto__` name of parsed headers stays a header, not the copy's prototype", () => {
    const parsed = JSON.parse('{"__proto__": "x", "a": "b", "workflow.step": "1"}') as Record<string, string>;
    const users = userHeadersOf(parsed);
    expect(Object.keys(users)).toEqual(["__proto__", "a"]);
    expect(Object.getOwnPropertyDescriptor(users, "__proto__")?.value).toBe("x");
  });

  it("flowHeadersOf: a job without flow headers hands on none, whatever a for...in over the copy visits", () => {
    const none = withPolluted(POLLUTION, () => visited(flowHeadersOf({ [HEADER_RUN_ID]: "r" })));
    expect(none).toEqual({});
    const own = withPolluted(POLLUTION, () => visited(flowHeadersOf({ [FLOW_RULE_HEADER]: "r", [FLOW_RATE_KEY_HEADER]: "k" })));
    expect(own).toEqual({ [FLOW_RULE_HEADER]: "r", [FLOW_RATE_KEY_HEADER]: "k" });
  });

  it("withCurrentLimit: a rule header set on Object.prototype gives a step with no flow no limit", async () => {
    const queue = await Queue.open(new MemoryStore(), "app");
    stops.push(() => queue.close());
    queue.defineFlowRules("steps", { "evil-rule": { concurrency: { limit: 3 } }, r: { concurrency: { limit: 2 } } });
    const core = { queue, queueName: "steps" };
    // The headers of a submission without RunOptions.flow: a plain object, which inherits the polluted names.
    const noFlow = withPolluted(POLLUTION, () => Object.keys(withCurrentLimit(core, {})));
    expect(noFlow).toEqual([]);
    const fromJob = withPolluted(POLLUTION, () => visited(withCurrentLimit(core, flowHeadersOf({ [HEADER_STEP]: "1" }))));
    expect(fromJob).toEqual({});
    // A step that has a rule still gets its rule's limit.
    const ruled = withPolluted(POLLUTION, () => ({ ...withCurrentLimit(core, flowHeadersOf({ [FLOW_RULE_HEADER]: "r" })) }));
    expect(ruled).toEqual({ [FLOW_RULE_HEADER]: "r", [FLOW_CONCURRENCY_LIMIT_HEADER]: "2" });
  });

  it("flowHeaders: RunOptions.flow takes no key from the prototype", () => {
    const headers = withPolluted({ concurrencyKey: "evil", rateKey: "evil" }, () => flowHeaders({ rule: "r" }));
    expect(headers).toEqual({ [FLOW_RULE_HEADER]: "r" });
    expect(() => withPolluted({ rule: "evil" }, () => flowHeaders({} as never))).toThrow(/RunOptions\.flow\.rule must be a string/);
  });
});
