/**
 * @module Vitest setup file: with TAQUBA_TEST_SEEDS=<from>-<to> set, every
 * test of the files run is repeated once per seed of the range, each
 * repeat with TAQUBA_TEST_SEED set to its seed, in one process (a vitest
 * start per seed cost more than most of the files' tests). A repeat that
 * passes prints `seed sweep: seed N passed: <test>` (a sweep stopped at a
 * time limit shows how far it got), one that
 * fails prints `seed sweep: seed N failed: <test>: <first line>`, and the
 * failed seeds are listed at the file's end; replay one with
 * TAQUBA_TEST_SEED=N alone (a test whose fixtures are shared across its
 * file's tests may see an earlier repeat's state here). Unset, it does
 * nothing.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";

interface Repeatable {
  type: string;
  name: string;
  repeats?: number;
  tasks?: Repeatable[];
}

/** The inclusive range TAQUBA_TEST_SEEDS names, or undefined when it is unset or not a range of whole numbers. */
export function seedRange(spec: string | undefined): { from: number; to: number } | undefined {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(spec ?? "");
  if (match === null) return undefined;
  const from = Number(match[1]);
  const to = Number(match[2]);
  return to >= from ? { from, to } : undefined;
}

const range = seedRange(process.env.TAQUBA_TEST_SEEDS);
if (process.env.TAQUBA_TEST_SEEDS !== undefined && range === undefined) {
  throw new Error(`TAQUBA_TEST_SEEDS=${process.env.TAQUBA_TEST_SEEDS} is not a range such as 1-40: give the first and last seed`);
}

if (range !== undefined) {
  const seedBefore = process.env.TAQUBA_TEST_SEED;
  const failedSeeds = new Map<string, number[]>();
  const errorsBefore = new WeakMap<object, number>();
  const repeatAll = (task: Repeatable) => {
    if (task.type === "test") task.repeats = range.to - range.from;
    for (const child of task.tasks ?? []) repeatAll(child);
  };
  // vitest reads the hook's first parameter as fixtures to set up, and asks for a destructuring pattern there.
  // biome-ignore lint/correctness/noEmptyPattern: no fixtures wanted, only the file's suite (the second parameter)
  beforeAll(({}, suite) => repeatAll(suite as unknown as Repeatable));
  beforeEach(({ task }) => {
    process.env.TAQUBA_TEST_SEED = String(range.from + (task.result?.repeatCount ?? 0));
    errorsBefore.set(task, task.result?.errors?.length ?? 0);
  });
  afterEach(({ task }) => {
    const errors = task.result?.errors ?? [];
    const seed = Number(process.env.TAQUBA_TEST_SEED);
    // A line per passed repeat too: a sweep stopped at a time limit shows which seeds it reached.
    if (errors.length <= (errorsBefore.get(task) ?? 0)) return void console.log(`seed sweep: seed ${seed} passed: ${task.name}`);
    const first = String(errors[errors.length - 1]?.message ?? "").split("\n")[0];
    console.log(`seed sweep: seed ${seed} failed: ${task.name}: ${first}`);
    failedSeeds.set(task.name, [...(failedSeeds.get(task.name) ?? []), seed]);
  });
  afterAll(() => {
    const lines = [...failedSeeds].map(([name, seeds]) => `  ${name}: ${seeds.join(", ")}`);
    if (seedBefore === undefined) delete process.env.TAQUBA_TEST_SEED;
    else process.env.TAQUBA_TEST_SEED = seedBefore;
    console.log(`seed sweep ${range.from}-${range.to}: ${lines.length === 0 ? "no seed failed" : `failed seeds\n${lines.join("\n")}`}`);
  });
}
