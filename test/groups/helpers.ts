/**
 * @module Fixtures of the run-group tests: the workflow tests' environment with
 * no retry backoff, 3 attempts and an hourly poll, plus small readers.
 */
import type { MockClock, ObjectStore, StepRunner, WorkflowRuntimeBuilder } from "taquba";
import { openEnv, type Env } from "../workflow/helpers.js";

export { dec, enc } from "../workflow/helpers.js";

export type GroupEnv = Env;

/**
 * A queue over `store` with a mock clock, no retry backoff and 3 attempts,
 * and a runtime over it. The poll interval is an hour and the clock never
 * moves unless a test moves it, so anything that finishes was woken by an
 * in-process notification.
 */
export function openGroupEnv(
  runner: StepRunner,
  opts: { store?: ObjectStore; clock?: MockClock; start?: boolean; configure?: (b: WorkflowRuntimeBuilder) => WorkflowRuntimeBuilder } = {},
): Promise<GroupEnv> {
  const { configure, ...rest } = opts;
  return openEnv(runner, {
    ...rest,
    queueOptions: { queueConfigs: { "workflow-steps": { backoff: { baseMs: 0, maxMs: 0 }, maxAttempts: 3 } } },
    configure: (b) => {
      const hourly = b.pollIntervalMs(3_600_000);
      return configure ? configure(hourly) : hourly;
    },
  });
}

/** Collects an async iterable. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Object keys under `prefix`. */
export async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}
