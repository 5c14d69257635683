/**
 * @module One owner process and two client processes over a local
 * directory and over the S3 protocol server: the clients submit runs (with
 * duplicates and input mismatches), signal, cancel and wait, while the
 * owner is SIGKILLed and restarted twice. Every run ends exactly once with
 * the right result, every client call gets the right answer, no request is
 * applied twice (a second application of a submission would leave a
 * terminal record of another incarnation; of a signal, a buffered signal),
 * and the inbox is empty at the end.
 *
 * Size: `TAQUBA_CLIENT_RUNS` runs in all (default 60 on a local directory
 * and 30 on S3, which keeps the file near a minute on two busy cores; the
 * full 500 is run by hand, see bench/RESULTS.md).
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_CONCURRENT_REQUESTS } from "../../runtime/client/inbox-server.js";
import { openStore, QueueReader, type ObjectStore } from "taquba";
import { startScript, type ChildScript } from "../support/child-script.js";
import { useS3Server, withS3Environment } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { ChildScenario } from "../support/child-scenario.js";
import { STEP_QUEUE, STORE_NAME } from "./fixtures/app.js";
import { missingRuns } from "./fixtures/missing-runs.js";
import { OWNER_KILLED_FAILURES } from "./fixtures/expected-failures.js";
import { expectRunLine, runLines } from "./fixtures/run-lines.js";

const OWNER = fileURLToPath(new URL("./fixtures/owner-process.ts", import.meta.url));
const CLIENT = fileURLToPath(new URL("./fixtures/client-process.ts", import.meta.url));
const tempDir = useTempDirs("taquba-client-proc-");
const sized = Number(process.env.TAQUBA_CLIENT_RUNS ?? 0);
// A child's start (Node, then tsx compiling the runtime, cold on a fresh clone) took over 60 s
// with several process test files running at once on two loaded cores.
const READY_MS = 180_000;

async function keys(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  // The owner keeps a placeholder in each inbox folder.
  for await (const o of store.list(prefix)) if (!o.key.endsWith("/~keep")) out.push(o.key);
  return out;
}

async function scenario(url: string, runs: number, env: NodeJS.ProcessEnv, listIntervalMs: string): Promise<void> {
  const store = openStore(url, { env });
  // Every wait ends within this, leaving the rest of the test's 600 s for the checks and the
  // cleanup; one that runs out fails with the children's state, last lines and stderr and the runs
  // not yet printed. On an idle machine the scenario takes about a minute.
  const run = new ChildScenario(450_000);
  let owners = 0;
  const startOwner = async (): Promise<ChildScript> => {
    const name = `owner ${++owners}`;
    const owner = run.track(name, startScript(OWNER, [url, listIntervalMs], { env }));
    await run.line(name, owner, (l) => l.includes("ready"), "ready", READY_MS);
    return owner;
  };
  const perClient = Math.ceil(runs / 2);
  const tags = ["a", "b"];
  const clients: ChildScript[] = [];
  run.onReport(() => missingRuns(url, env, clients, tags, perClient));
  const finished = () => clients.reduce((n, c) => n + c.lines.filter((l) => l.startsWith("{")).length, 0);
  // The report printed on a failed expectation, every child SIGKILLed and gone before the directory is removed, then
  // the children's background failures checked: the clients expect none (an owner killed mid-answer only delays theirs).
  const expected = (name: string) => (name.startsWith("owner ") ? OWNER_KILLED_FAILURES : []);
  await run.runToEnd(expected, async () => {
    let owner = await startOwner();
    for (const tag of tags) clients.push(run.track(`client ${tag}`, startScript(CLIENT, [url, tag, String(perClient), "6"], { env })));
    for (let kill = 1; kill <= 2; kill++) {
      const target = Math.floor((kill * perClient * 2) / 3);
      await run.until(`${target} runs finished`, () => finished() >= target || clients.every((c) => c.lines.includes("done")), 240_000);
      await owner.kill();
      owner = await startOwner();
    }
    for (const [i, c] of clients.entries()) {
      // A client that never ends fails here, with what every process printed, instead of running into the test's timeout.
      const exit = await run.exit(`client ${tags[i]}`, c, 240_000);
      expect(exit, c.stderr()).toEqual({ code: 0, signal: null });
    }
    // Requests are deleted just after they are answered.
    await run.until("the inbox is empty", async () => (await keys(store, `${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`)).length === 0, 30_000);
  });

  const lines = runLines(clients);
  expect(lines).toHaveLength(perClient * 2);
  const reader = await QueueReader.open(store, STORE_NAME);
  try {
    for (const line of lines) {
      await expectRunLine(line, reader);
      if (line.kind === "signal") expect(["delivered", "buffered"], line.runId).toContain(line.signal);
      // Every ended run has an outcome that agrees with its end, a cancel of a waiting step (no worker) included.
      expect(line.outcome, line.runId).toEqual({ status: line.status, errorKind: line.kind === "cancel" ? "cancelled" : null });
    }
    expect(
      (await reader.kvScan(`workflow/signal-buf/${STEP_QUEUE}/`)).entries.map((e) => e.key),
      "buffered signals left",
    ).toEqual([]);
  } finally {
    await reader.close();
  }
  expect(await keys(store, `${STORE_NAME}/inbox/${STEP_QUEUE}/requests/`), "requests left").toEqual([]);
  expect(await keys(store, `${STORE_NAME}/inbox/${STEP_QUEUE}/dead/`), "dead-lettered requests").toEqual([]);
  // An owner killed after answering and before deleting the request answers it again after the
  // restart, when the client may have read and removed the first answer. The owner applies up to
  // its window of requests at once, so each kill can orphan one answer per request in the window;
  // the owner removes them after the retention period.
  expect((await keys(store, `${STORE_NAME}/inbox/${STEP_QUEUE}/answers/`)).length, "answers left").toBeLessThanOrEqual(2 * DEFAULT_MAX_CONCURRENT_REQUESTS);
}

describe("one owner and two client processes, the owner SIGKILLed twice", () => {
  it("over a local directory", async () => {
    const dir = await tempDir();
    await scenario(`file://${dir}`, sized || 60, process.env, "1000");
  }, 600_000);

  describe("over the S3 protocol server", () => {
    const s3 = useS3Server();
    it("runs", async () => {
      // The SDK reads credentials from this process's environment too (the checks read the bucket); the children get a copy of it.
      await withS3Environment(s3, () =>
        scenario(`s3://${s3.bucket}/client-test?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=true`, sized || 30, { ...process.env }, "200"),
      );
    }, 600_000);
  });
});
