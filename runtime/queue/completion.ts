/**
 * @module In-process waiting for a job to finish.
 */
import { ValidationError } from "../errors.js";
import { validateDelay } from "../time-bounds.js";
import { validateJobId } from "./names.js";
import type { Finish } from "./notifier.js";
import type { QueueCore } from "./queue-core.js";
import { supersededKey } from "./keys.js";
import { decodeSuperseded } from "./record.js";
import { readJob } from "./transitions.js";
import type { CompletionResult } from "./types.js";
import { toJobInfo } from "./view.js";
import { warmJobs } from "./warm.js";
import { refuseUnknownWaitFields } from "./queue-option-fields.js";

export async function waitForCompletion(core: QueueCore, jobId: string, opts: { timeoutMs?: number; signal?: AbortSignal }): Promise<CompletionResult> {
  validateJobId(jobId);
  // NaN or a string would wait forever without a word (a string even turned the deadline into text).
  if (opts === null || typeof opts !== "object") throw new ValidationError(`waitForCompletion options must be an object { timeoutMs?, signal? }`);
  // A misspelt `timeoutMS` would wait for ever.
  refuseUnknownWaitFields(opts);
  if (opts.timeoutMs !== undefined) validateDelay("waitForCompletion's timeoutMs", opts.timeoutMs);
  for (let w = warmJobs(core.engine, [jobId]); w !== undefined; w = warmJobs(core.engine, [jobId])) await w;
  // Reading the record and registering the listener happen in one turn, so no finish is missed.
  const current = readJob(core.engine, jobId);
  if (current === undefined) return supersededOrGone(core, jobId);
  if (current.state === "done") return { kind: "done", job: toJobInfo(current) };
  if (current.state === "dead") return { kind: "dead", job: toJobInfo(current) };
  const stop = new AbortController();
  const onAbort = () => stop.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  let off: () => void = () => undefined;
  try {
    const finished = new Promise<Finish>((resolve) => {
      off = core.completions.on(jobId, resolve);
    });
    const racers: Promise<Finish | "timeout">[] = [finished];
    if (opts.timeoutMs !== undefined) {
      racers.push(core.clock.waitUntil(core.clock.now() + opts.timeoutMs, stop.signal).then(() => "timeout" as const));
    }
    if (opts.signal !== undefined) {
      const signal = opts.signal;
      racers.push(
        new Promise((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          stop.signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        }),
      );
    }
    const f = await Promise.race(racers);
    if (f === "timeout") return { kind: "timed_out" };
    if (f.kind === "cancelled") return { kind: "cancelled" };
    if (f.kind === "superseded") return { kind: "superseded", by: f.by };
    for (let w = warmJobs(core.engine, [jobId]); w !== undefined; w = warmJobs(core.engine, [jobId])) await w;
    const r = readJob(core.engine, jobId);
    if (f.kind === "dead") return r ? { kind: "dead", job: toJobInfo(r) } : { kind: "gone" };
    return r?.state === "done" ? { kind: "done", job: toJobInfo(r) } : { kind: "done" };
  } finally {
    off();
    opts.signal?.removeEventListener("abort", onAbort);
    if (!stop.signal.aborted) stop.abort();
  }
}

/** A job without a record: superseded (its mark says by whom) or gone. */
function supersededOrGone(core: QueueCore, jobId: string): CompletionResult {
  const key = supersededKey(jobId);
  const mark = core.engine.get(key);
  return mark === undefined ? { kind: "gone" } : { kind: "superseded", by: decodeSuperseded(key, mark).by };
}
