/**
 * @module The option-field policy at its edges, through public entry points
 * of the queue and the workflow runtime: prototype chains of 32 objects
 * (taken) and 33 (refused), frozen and sealed objects and their prototypes,
 * class instances with fields of a base class, a `JSON.parse`d `__proto__`
 * holding a real option, and Proxies whose listing traps throw. Each
 * refusal names what was wrong and writes nothing.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, withCounting } from "../../runtime/index.js";
import { refusal } from "../support/refusal.js";

/** An object with `depth` prototypes above it before `Object.prototype`, the topmost holding `top`. */
function chain(depth: number, top: Record<string, unknown>): object {
  let o: object = Object.assign(Object.create(Object.prototype) as object, top);
  for (let i = 1; i < depth; i++) o = Object.create(o) as object;
  return Object.create(o) as object;
}

async function openBoth() {
  const store = withCounting(new MemoryStore());
  const queue = await Queue.open(store, "app");
  const runtime = WorkflowRuntime.builder(queue, store, { runStep: async () => StepOutcome.succeed(new Uint8Array()) }, NoopTerminalHook).build();
  return { store, queue, runtime };
}

const input = new Uint8Array([1]);

describe("option objects at the policy's edges, at public entry points", () => {
  it("a chain of 32 prototypes is followed (its top field taken, its misspelt one refused); one of 33 is refused as such", async () => {
    const { store, queue, runtime } = await openBoth();
    try {
      const { jobId } = await queue.enqueue("jobs", input, chain(32, { priority: 6 }));
      expect((await queue.view().job(jobId))?.priority).toBe(6);
      store.reset();
      const misspelt = await refusal(() => queue.enqueue("jobs", input, chain(32, { priorty: 6 })));
      expect(misspelt.issues).toEqual([expect.stringMatching(/^EnqueueOptions\.priorty is not an option .*did you mean priority\?$/)]);
      const tooDeep = await refusal(() => queue.enqueue("jobs", input, chain(33, { priority: 6 })));
      expect(tooDeep.message + (tooDeep.issues ?? []).join("\n")).toMatch(/prototype chain is over 32 objects long/);
      const runTooDeep = await refusal(() => runtime.submit({ input, options: chain(33, { priority: 2 }) }));
      expect(runTooDeep.message + (runTooDeep.issues ?? []).join("\n")).toMatch(/RunOptions.*prototype chain is over 32 objects long/s);
      expect(store.counts.puts).toBe(0);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 1 });
    } finally {
      await runtime.close();
    }
  });

  it("frozen and sealed objects and prototypes are read like any other: fields taken, a misspelt one refused", async () => {
    const { store, queue, runtime } = await openBoth();
    try {
      const frozen = Object.freeze(Object.create(Object.freeze({ maxAttempts: 5 })) as object);
      const { jobId } = await queue.enqueue("jobs", input, frozen);
      expect((await queue.view().job(jobId))?.maxAttempts).toBe(5);
      const sealed = Object.seal({ priority: 4, headers: Object.freeze({ tenant: "acme" }) });
      const sealedJob = await queue.enqueue("jobs", input, sealed);
      expect(await queue.view().job(sealedJob.jobId)).toMatchObject({ priority: 4, headers: { tenant: "acme" } });
      store.reset();
      const refused = await refusal(() => queue.enqueue("jobs", input, Object.freeze(Object.create(Object.seal({ maxAtempts: 2 })) as object)));
      expect(refused.issues).toEqual([expect.stringMatching(/^EnqueueOptions\.maxAtempts is not an option .*did you mean maxAttempts\?$/)]);
      const run = await refusal(() => runtime.submit(Object.freeze({ input, options: Object.freeze({ priorty: 1 }) as object })));
      expect(run.issues).toEqual([expect.stringMatching(/^RunOptions\.priorty is not an option .*did you mean priority\?$/)]);
      expect(store.counts.puts).toBe(0);
    } finally {
      await runtime.close();
    }
  });

  it("class instances: a base class's fields are the instance's own, an instance field misspelt is refused, a method is not a field", async () => {
    const { store, queue, runtime } = await openBoth();
    class Base {
      priority = 3;
    }
    class Retrying extends Base {
      maxAttempts = 7;
      describe(): string {
        return "retrying";
      }
    }
    class Misspelt extends Base {
      maxAtempts = 7;
    }
    try {
      const { jobId } = await queue.enqueue("jobs", input, new Retrying());
      expect(await queue.view().job(jobId)).toMatchObject({ priority: 3, maxAttempts: 7 });
      store.reset();
      const refused = await refusal(() => queue.enqueue("jobs", input, new Misspelt()));
      expect(refused.issues).toEqual([expect.stringMatching(/^EnqueueOptions\.maxAtempts is not an option .*did you mean maxAttempts\?$/)]);
      expect(store.counts.puts).toBe(0);
    } finally {
      await runtime.close();
    }
  });

  it("a JSON.parse'd __proto__ is an own field refused as such, even when it holds a real option, and its contents are not taken", async () => {
    const { store, queue, runtime } = await openBoth();
    try {
      store.reset();
      const parsed = JSON.parse('{"__proto__": {"priority": 9}, "maxAttempts": 2}') as object;
      const refused = await refusal(() => queue.enqueue("jobs", input, parsed));
      expect(refused.issues).toEqual([expect.stringMatching(/^EnqueueOptions\.__proto__ is not an option/)]);
      const run = await refusal(() => runtime.submit({ input, options: JSON.parse('{"__proto__": {"priority": 9}}') as object }));
      expect(run.issues).toEqual([expect.stringMatching(/^RunOptions\.__proto__ is not an option/)]);
      expect(store.counts.puts).toBe(0);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0 });
    } finally {
      await runtime.close();
    }
  });

  it("a Proxy whose listing or prototype trap throws is refused with what threw, nothing written", async () => {
    const { store, queue, runtime } = await openBoth();
    try {
      store.reset();
      const traps: [string, ProxyHandler<object>][] = [
        [
          "ownKeys",
          {
            ownKeys: () => {
              throw new Error("no keys today");
            },
          },
        ],
        [
          "getPrototypeOf",
          {
            getPrototypeOf: () => {
              throw new Error("no prototype today");
            },
          },
        ],
        [
          "getOwnPropertyDescriptor",
          {
            getOwnPropertyDescriptor: () => {
              throw new Error("no descriptor today");
            },
          },
        ],
      ];
      for (const [trap, handler] of traps) {
        const job = await refusal(() => queue.enqueue("jobs", input, new Proxy({ priority: 1 }, handler)));
        expect(job.message + (job.issues ?? []).join("\n"), trap).toMatch(/EnqueueOptions.*no (keys|prototype|descriptor) today/s);
        const run = await refusal(() => runtime.submit({ input, options: new Proxy({ priority: 1 }, handler) }));
        expect(run.message + (run.issues ?? []).join("\n"), trap).toMatch(/RunOptions.*no (keys|prototype|descriptor) today/s);
      }
      expect(store.counts.puts).toBe(0);
    } finally {
      await runtime.close();
    }
  });
});
