/**
 * @module A damaged record's error in the operator's terms: which run,
 * signal wait, group member or schedule it belongs to, what is wrong with
 * it, and what an operator can do, instead of the store's key and the
 * engine's advice to remove the store's data. A listing's damaged run
 * arrives as fields (`RunDamage`); an error names its record's key
 * (`StoreCorruptedError.objectKey`), which the workflow layer, owner of
 * the key layout, reads (`damagedItemOf`).
 */
import { DAMAGED_SCHEDULE_ADVICE } from "../../runtime/workflow/schedules/schedule-record.js";
import { damagedItemOf, type DamagedItem, type RunDamage } from "../../runtime/workflow/runs/run-damage.js";
import { RECORD_WORDS } from "../../runtime/workflow/runs/repair.js";
import type { GroupDamage } from "../../runtime/workflow/groups/group-listing.js";
import { GroupMemberDamagedError } from "../../runtime/workflow/groups/group-errors.js";
import type { StoreCorruptedError } from "../../runtime/errors.js";

/** What an operator can do about a damaged record of run `runId`. */
const runAdvice = (runId: string) =>
  `mend it with taquba runs repair ${JSON.stringify(runId)} (the run ends failed, saying it was repaired) or restore the store from a backup; the other runs are not affected (docs/reliability.md, "The operator tools over damaged records")`;
/** What an operator can do about a damaged record that belongs to no one run it can name. */
const RESTORE_ADVICE =
  'restore the store from a backup to mend it; the other runs are not affected (docs/reliability.md, "The operator tools over damaged records")';

/** What an operator can do about a damaged signal wait: its run is the one whose step waits on the key. */
const WAIT_ADVICE =
  'mend it with taquba runs repair on the run that waits for that signal (it ends failed, saying it was repaired) or restore the store from a backup; the other runs are not affected (docs/reliability.md, "The operator tools over damaged records")';
/** What an operator can do about a damaged member record of run `runId`. */
const memberAdvice = (runId: string) =>
  `mend it with taquba runs repair ${JSON.stringify(runId)} (an active member ends failed; an ended one keeps its end, which its record is rewritten from) or restore the store from a backup; the other runs are not affected (docs/reliability.md, "The operator tools over damaged records")`;
/** What an operator can do about a damaged entry of child `child` under `parent`. */
const childAdvice = (parent: string, child: string) =>
  `mend it with taquba runs repair ${JSON.stringify(child)} (the child ends failed and its parent is told) or taquba runs repair ${JSON.stringify(parent)} (the parent ends failed and settles the child by its policy), or restore the store from a backup; the other runs are not affected (docs/reliability.md, "The operator tools over damaged records")`;

/** A damaged record with its kind in words, as the dashboard shows it. */
export type RunDamageShown = RunDamage & { readonly words: string };

/** `damage` with its record's kind in words (the dashboard's page takes them from here). */
export function damageWithWords(damage: RunDamage): RunDamageShown {
  return { ...damage, words: RECORD_WORDS[damage.record] };
}

/** Run `runId`'s damaged record in the operator's terms. */
export function runDamageText(runId: string, damage: RunDamage): string {
  return `run ${JSON.stringify(runId)}: its ${RECORD_WORDS[damage.record]} is damaged (${damage.detail}); ${runAdvice(runId)}`;
}

/** Group `groupId`'s damaged record, as a group listing reports it, in the operator's terms. */
export function groupDamageText(groupId: string, damage: GroupDamage): string {
  const what =
    damage.record === "member"
      ? `member ${JSON.stringify(damage.memberKey ?? "")} of a run group: its record is damaged (${damage.detail}); ${damage.runId === undefined ? RESTORE_ADVICE : memberAdvice(damage.runId)}`
      : `its listing entry is damaged (${damage.detail}); ${RESTORE_ADVICE}`;
  return `group ${JSON.stringify(groupId)} could not be counted: ${what}`;
}

function itemText(item: DamagedItem, detail: string): string {
  switch (item.kind) {
    case "run":
      return runDamageText(item.runId, { record: item.record, detail });
    case "signal_wait":
      return `the wait for signal ${JSON.stringify(item.key)} is damaged (${detail}); ${WAIT_ADVICE}`;
    case "group_member":
      return `member ${JSON.stringify(item.memberKey)} of a run group: its record is damaged (${detail}); ${item.runId === undefined ? RESTORE_ADVICE : memberAdvice(item.runId)}`;
    case "child_entry":
      return `a child run entry of run ${JSON.stringify(item.parentRunId)}${item.childRunId === undefined ? "" : ` (child ${JSON.stringify(item.childRunId)})`} is damaged (${detail}); ${item.childRunId === undefined ? RESTORE_ADVICE : childAdvice(item.parentRunId, item.childRunId)}`;
    case "schedule":
      return `schedule ${JSON.stringify(item.scheduleId)}: its record is damaged (${detail}); ${DAMAGED_SCHEDULE_ADVICE(item.scheduleId)}`;
  }
}

/**
 * The damage (`detail`) of the record at `key` in the operator's terms;
 * undefined when the key is not a workflow record's. `memberRunId`, where
 * the reader knew it (`GroupMemberDamagedError`), names a damaged member's
 * run instead of the id its key derives, which on a sharded store may
 * lack the run's route suffix.
 */
export function damageText(key: string, detail: string, memberRunId?: string): string | undefined {
  const item = damagedItemOf(key);
  if (item === undefined) return undefined;
  return itemText(item.kind === "group_member" && memberRunId !== undefined ? { ...item, runId: memberRunId } : item, detail);
}

/** The damage a `StoreCorruptedError` reports, in the operator's terms (see `damageText`). */
export function corruptionText(e: StoreCorruptedError): string | undefined {
  return damageText(e.objectKey, e.detail, e instanceof GroupMemberDamagedError ? e.memberRunId : undefined);
}

const CORRUPTED = /object "([^"]+)" is corrupted \((.*)\); /s;

/**
 * `text` with the `StoreCorruptedError` message it holds put in the
 * operator's terms, or as it is when it holds none: for an error that
 * reached here only as text (the owner's answer to a client's request, a
 * group listing's reason), where no fields came with it.
 */
export function withDamageText(text: string): string {
  const m = CORRUPTED.exec(text);
  if (m === null) return text;
  const said = damageText(m[1]!, m[2]!);
  return said === undefined ? text : `${text.slice(0, m.index)}${said}`;
}
