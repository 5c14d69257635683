/**
 * @module The operator CLI's command line, in process: usage, shared
 * options, exit codes, and `queue stats` over a real directory store.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import type { Command } from "../../operator/cli/registry.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-opscli-");

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

describe("taquba (operator commands)", () => {
  it("prints the overview on --help (exit 0) and without arguments (exit 2, on stderr)", async () => {
    const a = capture();
    expect(await main(["--help"], a.io)).toBe(EXIT.ok);
    expect(a.out.join("\n")).toContain("taquba queue stats <store-url>");
    expect(a.out.join("\n")).toContain("taquba codegen");
    const b = capture();
    expect(await main([], b.io)).toBe(EXIT.usage);
    expect(b.err.join("\n")).toContain("usage: taquba <command>");
  });

  it("refuses an unknown command, an unknown option, a missing store URL or --name, and extra operands, with exit 2", async () => {
    const cases: [string[], string][] = [
      [["nope"], 'unknown command "nope"'],
      [["queue"], "taquba queue needs one of: stats"],
      [["queue", "stats", "file:///tmp/x", "--name", "n", "--bogus"], "Unknown option '--bogus'"],
      [["queue", "stats", "--name", "n"], "the store URL is missing"],
      [["queue", "stats", "file:///tmp/x"], "--name is missing"],
      [["queue", "stats", "file:///tmp/x", "--name", "n", "extra"], 'got "extra"'],
      [["queue", "stats", "file:///tmp/x", "--name", "n", "--timeout", "1e30"], "--timeout must be a whole number"],
      [["queue", "stats", "ftp://x", "--name", "n"], "invalid store URL"],
    ];
    const saved = process.env["TAQUBA_NAME"];
    delete process.env["TAQUBA_NAME"];
    try {
      for (const [argv, message] of cases) {
        const c = capture();
        expect(await main(argv, c.io), argv.join(" ")).toBe(EXIT.usage);
        expect(c.err.join("\n"), argv.join(" ")).toContain(message);
      }
    } finally {
      if (saved !== undefined) process.env["TAQUBA_NAME"] = saved;
    }
  });

  it("answers exit 3 for a store no owner ever wrote under that name", async () => {
    const c = capture();
    expect(await main(["queue", "stats", pathToFileURL(await tempDir()).href, "--name", "demo"], c.io)).toBe(EXIT.notFound);
    expect(c.err.join("\n")).toContain('no queue store named "demo"');
  });

  it("prints queue stats as an aligned table and as one JSON document", async () => {
    const dir = await tempDir();
    const q = await Queue.open(new LocalStore(dir), "demo", { flushIntervalMs: 0 });
    await q.enqueue("emails", new Uint8Array([1]), { priority: 5 });
    await q.enqueue("emails", new Uint8Array([2]), { priority: 1 });
    await q.enqueue("other", new Uint8Array([3]), { maxAttempts: 1 });
    const job = await q.claim("other");
    await q.nack(job!, "boom");
    await q.close();

    const t = capture();
    expect(await main(["queue", "stats", pathToFileURL(dir).href, "--name", "demo"], t.io)).toBe(EXIT.ok);
    const lines = t.out.join("\n").split("\n");
    expect(lines[0]).toMatch(/^QUEUE\s+PENDING\s+SCHEDULED\s+CLAIMED\s+DONE\s+DEAD\s+OLDEST PENDING$/);
    expect(lines[1]).toMatch(/^emails\s+2\s+0\s+0\s+0\s+0\s+\d+(ms|s)$/);
    // Columns line up: each row's second column starts where the header's does.
    expect(lines[1]!.indexOf("2")).toBe(lines[0]!.indexOf("PENDING"));
    expect(lines[2]).toMatch(/^other\s+0\s+0\s+0\s+0\s+1\s+-$/);
    expect(t.out.join("\n")).toMatch(/dead letters\s+1/);
    expect(t.out.join("\n")).toMatch(/WAL objects\s+\d+/);

    const j = capture();
    expect(await main(["queue", "stats", pathToFileURL(dir).href, "--name", "demo", "--json"], j.io)).toBe(EXIT.ok);
    const doc = JSON.parse(j.out.join("\n")) as { queues: { queue: string; counts: { pending: number }; oldestPendingAt?: number }[]; walObjects: number };
    const emails = doc.queues.find((q) => q.queue === "emails")!;
    expect(emails.counts.pending).toBe(2);
    expect(typeof emails.oldestPendingAt).toBe("number");
    expect(doc.walObjects).toBeGreaterThan(0);
  });

  it("registers commands from a list: a command added there is parsed, run and listed", async () => {
    const seen: unknown[] = [];
    const extra: Command = {
      path: ["hello"],
      operands: "<who>",
      arity: [1, 1],
      summary: "greets",
      options: { loud: { type: "boolean", description: "shout" } },
      async run(ctx) {
        seen.push([ctx.operands, ctx.options["loud"], ctx.json, ctx.session.options.name, ctx.session.options.stepQueue]);
        return EXIT.ok;
      },
    };
    const c = capture();
    expect(await main(["hello", "file:///tmp/x", "ada", "--loud", "--name", "n", "--json"], c.io, [extra])).toBe(EXIT.ok);
    expect(seen).toEqual([[["ada"], true, true, "n", "workflow-steps"]]);
    const h = capture();
    expect(await main(["hello", "--help"], h.io, [extra])).toBe(EXIT.ok);
    expect(h.out.join("\n")).toContain("usage: taquba hello <store-url> <who> [options]");
    expect(h.out.join("\n")).toMatch(/--loud\s+shout/);
  });
});
