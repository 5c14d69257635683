/**
 * @module Which of a run's records a damaged key is, from the layer that
 * owns the key layout: a listing reports a run it could not read with the
 * record and the detail as fields (`RunDamage`), so the operator's text is
 * built from them, never from an error's message or a key split elsewhere.
 * Pure.
 */
import { StoreCorruptedError } from "../../errors.js";
import { CHILDREN_PREFIX, GROUPS_PREFIX, OUTCOMES_PREFIX, RUNS_PREFIX, SIGNAL_WAIT_PREFIX, STEPS_PREFIX } from "../records/kv-keys.js";
import { RUN_INDEX_PREFIX } from "./run-index.js";
import { SCHEDULES_PREFIX } from "../schedules/schedule-record.js";
import { memberRunId } from "../groups/group-keys.js";

/**
 * The records of a run that an operator can find damaged (see `repairRun`).
 * A listing reports the first four; a repair also checks the signal wait
 * its step waits on, its group member record and its child run entries
 * (its own under its parent, and those of its children).
 */
export type RunRecordKind = "run_record" | "step_pointer" | "end_record" | "index_entry" | "signal_wait" | "group_member" | "child_entry";

/** One damaged record of a run: which record and what is wrong with it (without its key). */
export interface RunDamage {
  readonly record: RunRecordKind;
  readonly detail: string;
}

/** What a damaged workflow record's key names: a run's record, a signal wait, a group member or a schedule. */
export type DamagedItem =
  | { readonly kind: "run"; readonly runId: string; readonly record: RunRecordKind }
  | { readonly kind: "signal_wait"; readonly key: string }
  | { readonly kind: "group_member"; readonly memberKey: string; readonly runId?: string }
  | { readonly kind: "child_entry"; readonly parentRunId: string; readonly childRunId?: string }
  | { readonly kind: "schedule"; readonly scheduleId: string };

const INDEX_TIME_DIGITS = 16;

/** The part of `key` after `prefix` and its step queue segment; undefined when `key` is not under `prefix`. */
function afterQueue(key: string, prefix: string): string | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  const slash = rest.indexOf("/");
  return slash < 0 || slash === rest.length - 1 ? undefined : rest.slice(slash + 1);
}

/** What the workflow record at `key` belongs to; undefined for a key that is none of the runtime's run, signal, group or schedule records. */
export function damagedItemOf(key: string): DamagedItem | undefined {
  const run = (record: RunRecordKind, runId: string | undefined): DamagedItem | undefined => (runId === undefined ? undefined : { kind: "run", runId, record });
  if (key.startsWith(RUNS_PREFIX)) return run("run_record", afterQueue(key, RUNS_PREFIX));
  if (key.startsWith(STEPS_PREFIX)) return run("step_pointer", afterQueue(key, STEPS_PREFIX));
  if (key.startsWith(OUTCOMES_PREFIX)) return run("end_record", afterQueue(key, OUTCOMES_PREFIX));
  if (key.startsWith(RUN_INDEX_PREFIX)) {
    const suffix = afterQueue(key, RUN_INDEX_PREFIX);
    return run("index_entry", suffix === undefined ? undefined : suffix.slice(INDEX_TIME_DIGITS) || suffix);
  }
  const wait = afterQueue(key, SIGNAL_WAIT_PREFIX);
  if (wait !== undefined) return { kind: "signal_wait", key: wait };
  const member = afterQueue(key, GROUPS_PREFIX);
  if (member !== undefined) {
    // After the group's storage tag: the member key (which may hold `/`).
    const slash = member.indexOf("/");
    if (slash < 0) return undefined;
    const memberKey = member.slice(slash + 1);
    return { kind: "group_member", memberKey, ...memberRunOf(member.slice(0, slash), memberKey) };
  }
  const child = afterQueue(key, CHILDREN_PREFIX);
  if (child !== undefined) {
    const [parentRunId, childRunId] = child.split("/") as [string, string | undefined];
    return { kind: "child_entry", parentRunId, ...(childRunId ? { childRunId } : {}) };
  }
  const schedule = afterQueue(key, SCHEDULES_PREFIX);
  if (schedule !== undefined) return { kind: "schedule", scheduleId: schedule };
  return undefined;
}

/** The run id of member `key` of the group tagged `tag`, when those make one. */
function memberRunOf(tag: string, key: string): { runId: string } | Record<string, never> {
  try {
    return { runId: memberRunId(tag, key) };
  } catch {
    return {};
  }
}

/** The damage `err` reports on one of run `runId`'s records; undefined when it is no `StoreCorruptedError` of that run's records. */
export function runDamageOf(err: unknown, runId: string): RunDamage | undefined {
  if (!(err instanceof StoreCorruptedError)) return undefined;
  const item = damagedItemOf(err.objectKey);
  return item?.kind === "run" && item.runId === runId ? { record: item.record, detail: err.detail } : undefined;
}
