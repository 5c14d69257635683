/**
 * @module Two repairs of the same ended parent at once, from two runtimes
 * over one queue (a directory and the S3 protocol server): the parent was
 * cancelled while its child's entry was damaged, so its settlement of its
 * children stopped there and the child runs on. Exactly one repair mends
 * it (`records_rewritten`, the child cancelled); the other wrote nothing
 * and must say so (`RunNotDamagedError`), never report the rewrite too.
 */
import { pack, unpack } from "msgpackr";
import { afterEach, expect } from "vitest";
import { NoopTerminalHook, RunNotDamagedError, WorkflowRuntime, type ObjectStore, type RepairOutcome } from "../../runtime/index.js";
import { childEntryKey } from "../../runtime/workflow/records/kv-keys.js";
import { openServedOwner, waitingSteps } from "../operator/fixtures/signal-owner.js";
import { scenarioOnBothStores } from "../operator/fixtures/on-both-stores.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-repair-race-");
const Q = "workflow-steps";
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(120_000);
const PARENTS = ["p0", "p1", "p2"];
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
}, SCENARIO_MS);

async function scenario(store: ObjectStore): Promise<void> {
  const children = new Map<string, string>();
  const served = await openServedOwner(store, waitingSteps(children));
  stops.push(served.stop);
  const { queue, runtime } = served;
  // A second runtime over the same queue, as a process holding two (an API's and a worker's) has.
  const other = WorkflowRuntime.builder(queue, store, { runStep: waitingSteps() }, NoopTerminalHook).build();
  const step = async (id: string) => (await runtime.status(id))?.step;
  for (const id of PARENTS) await runtime.submit({ runId: id, input: enc.encode("parent:cancel") });
  for (const id of PARENTS)
    await until(`${id} and its child wait`, async () => (await step(id)) === 1 && children.has(id) && (await step(children.get(id)!)) === 1, SCENARIO_MS / 3);
  for (const id of PARENTS) {
    const key = childEntryKey(Q, id, children.get(id)!);
    await queue.kvPut(key, new Uint8Array(pack({ ...(unpack((await queue.kvGet(key))!) as object), parentClose: "sometimes" })));
    await runtime.cancel(id);
    expect((await runtime.wait(id)).termination.status).toBe("cancelled");
  }
  for (const id of PARENTS) {
    const child = children.get(id)!;
    // Its parent's settlement stopped at the damaged entry: the child runs on.
    expect((await runtime.status(child))?.state).toBe("pending");
    const answers = await Promise.allSettled([runtime.repairRun(id), other.repairRun(id)]);
    const done = answers.flatMap((a) => (a.status === "fulfilled" ? [a.value] : []));
    const refused = answers.flatMap((a) => (a.status === "rejected" ? [a.reason as unknown] : []));
    expect(done, `${id}: one repair mends it`).toHaveLength(1);
    expect(done[0]).toMatchObject<Partial<RepairOutcome>>({ action: "records_rewritten", childrenCancelled: [child], dryRun: false });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(RunNotDamagedError);
    expect(refused[0]).toMatchObject({ reason: "ended" });
    expect((await runtime.wait(child)).termination.status).toBe("cancelled");
    expect(await queue.kvGet(childEntryKey(Q, id, child))).toBeNull();
    expect((await runtime.outcome(id))?.status).toBe("cancelled");
    // A third repair, alone, finds nothing to do either.
    await expect(other.repairRun(id)).rejects.toBeInstanceOf(RunNotDamagedError);
  }
}

scenarioOnBothStores(tempDir, "run-repair-race", scenario, SCENARIO_MS);
