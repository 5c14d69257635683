/**
 * @module A child's start spec and a run group's options, each field read
 * once, their nested options too: a getter that throws, or a revoked Proxy,
 * is a `ValidationError` naming the field; a getter that answers another
 * value on a second read starts the child, or the group's members, with
 * the value it answered first, the one the checks saw.
 */
import { describe, expect, it } from "vitest";
import { StepOutcome, type ChildRunSpec, type RunOptions, type Step } from "taquba";
import { dec, enc, openEnv, runnerOf, until } from "./helpers.js";
import { flipping, mostReads, revoked, throwing } from "../support/hostile-options.js";
import { refusal } from "../support/refusal.js";

describe("children.start reads its spec once", () => {
  it("refuses what cannot be read naming it, and starts the child with the input and options first read", async () => {
    const specs = new Map<string, () => unknown>([
      ["input throws", () => throwing("input")],
      ["options throw", () => ({ input: enc("child"), options: throwing("priority") })],
      ["options revoked", () => ({ input: enc("child"), options: revoked() })],
      ["flow revoked", () => ({ input: enc("child"), options: { flow: revoked() } })],
      ["header throws", () => ({ input: enc("child"), options: { headers: throwing("tenant") } })],
    ]);
    const flip = flipping({
      input: [enc("child first"), enc("child second")],
      options: [
        { priority: 2, headers: { tenant: "a" } },
        { priority: 1.5, tenant: "b" },
      ],
      key: ["k", "not a key!"],
    });
    specs.set("flipping", () => flip.value);
    const answers = new Map<string, string>();
    const children: string[] = [];
    const env = await openEnv(
      runnerOf(async (s: Step) => {
        const text = dec(s.payload);
        if (text.startsWith("child")) {
          children.push(`${text} tenant=${s.headers.tenant ?? "none"}`);
          return StepOutcome.succeed(enc("ok"));
        }
        try {
          const started = await s.children.start(specs.get(text)!() as ChildRunSpec);
          answers.set(text, `started ${started.runId}`);
        } catch (e) {
          answers.set(text, `${(e as Error).constructor.name}: ${(e as Error).message} ${((e as { issues?: string[] }).issues ?? []).join("; ")}`);
        }
        return StepOutcome.succeed(enc("parent done"));
      }),
    );
    try {
      for (const name of specs.keys()) await env.runtime.submit({ runId: `p-${name.replace(/ /g, "-")}`, input: enc(name) });
      for (const name of specs.keys()) expect((await env.runtime.wait(`p-${name.replace(/ /g, "-")}`)).termination.status).toBe("succeeded");
      expect(answers.get("input throws")).toMatch(/^ValidationError: [\s\S]*reading children\.start\.input threw: no input today/);
      expect(answers.get("options throw")).toMatch(/^ValidationError: [\s\S]*reading children\.start\.options\.priority threw: no priority today/);
      expect(answers.get("options revoked")).toMatch(/^ValidationError: children\.start\.options must be an object, got a revoked Proxy/);
      expect(answers.get("flow revoked")).toMatch(/^ValidationError: children\.start\.options\.flow must be an object, got a revoked Proxy/);
      expect(answers.get("header throws")).toMatch(/^ValidationError: reading header "tenant" of children\.start\.options\.headers threw: no tenant today/);
      expect(answers.get("flipping")).toMatch(/^started /);
      expect(mostReads(flip.reads)).toBe(1);
      const child = answers.get("flipping")!.slice("started ".length);
      expect(child).toMatch(/k/);
      expect((await env.runtime.wait(child)).termination.status).toBe("succeeded");
      await until(() => children.length === 1, "the child's step");
      expect(children).toEqual(["child first tenant=a"]);
    } finally {
      await env.stop();
    }
  });
});

describe("a run group's options are read once", () => {
  it("refuses what cannot be read naming it, and runs every member with the options first read", async () => {
    const env = await openEnv(runnerOf(async (s: Step) => StepOutcome.succeed(s.payload)));
    try {
      const group = env.runtime.group("g");
      const members = [
        { key: "a", input: enc("a") },
        { key: "b", input: enc("b") },
      ];
      const thrown = await refusal(() => group.submit(members, throwing("maxAttemptsPerStep") as RunOptions));
      expect([thrown.message, ...thrown.issues].join("\n")).toMatch(/reading the group's RunOptions\.maxAttemptsPerStep threw: no maxAttemptsPerStep today/);
      const gone = await refusal(() => group.submit(members, revoked() as RunOptions));
      expect(gone.message).toMatch(/the group's RunOptions must be an object, got a revoked Proxy/);
      const { value, reads } = flipping({ priority: [2, 1.5], maxAttemptsPerStep: [3, 0], runAt: [undefined, Number.NaN] });
      await group.submit(members, value as RunOptions);
      expect(mostReads(reads)).toBe(1);
      for (const m of members) expect((await env.runtime.wait(group.runIdOf(m.key))).termination.status).toBe("succeeded");
    } finally {
      await env.stop();
    }
  });
});
