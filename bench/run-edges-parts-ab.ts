/**
 * @module CPU per call of the parts of a run's edges, two or more compiled
 * checkouts alternating round by round (A B, then B A): the run id check
 * of a ULID (`RunId.parse`, each submit and wait), the wait's first read of
 * an active run (`WorkflowView.phaseNow` where the checkout has it, else
 * `stateNow`, which decodes the run record and step pointer), and the
 * terminal record's encoding for a commit (`terminalRecordForCommit`, a
 * succeeded run with its outcome inline, as over a MemoryStore). Median ns
 * per call of the rounds after the first two.
 *
 * Run: `npm run build` in each checkout, then
 * `CALLS=200000 ROUNDS=10 npx tsx bench/run-edges-parts-ab.ts <checkout A> <checkout B>`.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { median } from "./support/percentile.js";
import { loadAverageText } from "./support/load-average.js";
import { loadCheckout, type Taquba } from "./support/step-workload.js";

const CALLS = Number(process.env.CALLS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error("name one or more built checkouts");

type Part = () => unknown;
interface View {
  phaseNow?(runId: string): unknown;
  stateNow(runId: string): unknown;
}

async function partsOf(dir: string): Promise<Record<string, Part>> {
  const T: Taquba = await loadCheckout(dir);
  const records = (await import(pathToFileURL(resolve(dir, "dist/runtime/workflow/records/records.js")).href)) as {
    terminalRecordForCommit(r: object, target: object): unknown;
  };
  const queue = await T.Queue.open(new T.MemoryStore(), "bench");
  const runner = { runStep: async () => T.StepOutcome.succeed(new Uint8Array(1)) };
  const runtime = T.WorkflowRuntime.builder(queue, new T.MemoryStore(), runner, T.NoopTerminalHook).build();
  // No worker: the run stays active, as at a wait's first read.
  const { runId } = await runtime.submit({ input: new TextEncoder().encode("0/1") });
  const view = runtime.view() as unknown as View;
  const firstRead = view.phaseNow === undefined ? () => view.stateNow(runId) : () => view.phaseNow!(runId);
  const ulid = T.RunId.generate();
  const terminal = {
    runId,
    status: "succeeded",
    finalStep: 9,
    terminatedAtMs: 1_700_000_000_123,
    incarnation: "01JEXAMPLEINCARNATION0000",
    token: "01JEXAMPLEJOBID0000000000:1",
    memoPrefix: "workflow-steps-memo",
    submittedAtMs: 1_700_000_000_000,
    submission: "01JEXAMPLEINCARNATION0000",
    inline: { headers: {}, result: new Uint8Array([49, 48]) },
  };
  const target = { copiesCommittedValues: true };
  return {
    "RunId.parse (ULID)": () => T.RunId.parse(ulid),
    "wait's first read of an active run": firstRead,
    "terminal record for a commit": () => records.terminalRecordForCommit(terminal, target),
  };
}

const parts: Record<string, Part>[] = [];
for (const d of dirs) parts.push(await partsOf(d));
console.log(`CALLS=${CALLS} ROUNDS=${ROUNDS} node ${process.version} load ${loadAverageText()}`);
const ns = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++) {
  const order = dirs.map((_, i) => i);
  if (r % 2 === 1) order.reverse();
  for (const i of order) {
    for (const [name, f] of Object.entries(parts[i]!)) {
      const t = process.cpuUsage();
      for (let c = 0; c < CALLS; c++) f();
      const used = process.cpuUsage(t);
      const key = `${i} ${name}`;
      if (!ns.has(key)) ns.set(key, []);
      ns.get(key)!.push(((used.user + used.system) * 1000) / CALLS);
    }
  }
}
for (const name of Object.keys(parts[0]!)) {
  const line = dirs.map((d, i) => {
    const xs = ns.get(`${i} ${name}`)!.slice(2);
    return `${d} ${median(xs).toFixed(1)} ns (${xs.map((x) => x.toFixed(0)).join(", ")})`;
  });
  console.log(`${name}: ${line.join("; ")}`);
}
console.log(`load at end ${loadAverageText()}`);
