/**
 * @module The step workload of bench/support/step-workload.ts through the
 * typed path: one workflow defined by hand ("bench.loop"), whose one step
 * continues to itself through `ctx.next.loop(...)` until the run has taken
 * its steps, served by a `WorkflowDispatcher`. Each delivery builds a typed
 * step context, its continuations and its transition.
 */
import { loadCheckout, STEPS_PER_RUN, type StepWorkload, type Taquba, workloadOf } from "./step-workload.js";

type Generated = typeof import("../../runtime/generated.js");

interface Loop {
  j: number;
  m: number;
}

/** Opens the typed workload's queue ("bench") and runtime over `store`, runs of `stepsPerRun` steps, and starts its worker. */
export async function openTypedStepWorkload(
  T: Taquba,
  dir: string,
  store: import("../../runtime/index.js").ObjectStore,
  stepsPerRun = STEPS_PER_RUN,
): Promise<StepWorkload> {
  const G = await loadCheckout<Generated>(dir, "dist/runtime/generated.js");
  const accept = <V>(name: string) =>
    T.createValidator<V>(
      name,
      Object.assign(() => true, { errors: null }),
    );
  const loop = accept<Loop>("bench.loop input");
  const definition = T.defineWorkflow<"bench.loop", Loop, Loop, never, Record<string, never>, unknown>({
    name: "bench.loop",
    package: "bench",
    input: loop,
    result: loop,
    headers: T.defineHeaders({ package: "bench", names: [], required: [], validator: accept("bench headers") }),
    entry: "loop",
    steps: { loop: { method: "loop", payload: loop, next: ["loop"] } },
    contractHash: "0",
  });
  type Ctx = { next: { loop(p: Loop): unknown }; succeed(r: Loop): unknown };
  const handler = {
    loop: async (p: Loop, ctx: Ctx) => (p.j + 1 >= p.m ? ctx.succeed(p) : ctx.next.loop({ j: p.j + 1, m: p.m })),
  };
  const dispatcher = T.WorkflowDispatcher.builder()
    .register(definition, handler as never)
    .build();
  const queue = await T.Queue.open(store, "bench");
  const runtime = T.WorkflowRuntime.builder(queue, store, dispatcher, T.NoopTerminalHook).maxConcurrentSteps(64).build();
  const handle = runtime.spawn();
  const one = async () => {
    const { runId } = await runtime.submit({ input: G.encodeStepEnvelope("bench.loop", "loop", { j: 0, m: stepsPerRun }) });
    await runtime.wait(runId);
    const o = await runtime.outcome(runId);
    if (o?.status !== "succeeded") throw new Error(`run ${runId} did not succeed: ${JSON.stringify(o)}`);
  };
  return workloadOf(queue, handle, one);
}
