/**
 * Acceptance: the "Jobs" section of the public API contract.
 */
import { describe, it } from "vitest";

describe("JobRunner", () => {
  it.todo("JobRunner.builder(queue, store).register(def, handler).build(): gap, JobRunner is not exported from the package root");
  it.todo("runner.submit(def, input, opts) → handle; handle.result() and handle.fetchResult(), also after a restart: gap, no JobRunner export");
  it.todo("runner.group(id) → JobGroup submit/results/join/resume/status/cancel/forget: gap, no JobRunner export");
});
