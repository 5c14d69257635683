/**
 * @module A damaged record's error in the operator's terms: which run,
 * signal wait, group member or schedule it belongs to (from the record's
 * key, which the runtime's `StoreCorruptedError` carries), what is wrong
 * with it, and what an operator can do, instead of the store's key and
 * the engine's advice to remove the store's data.
 */
import { DAMAGED_SCHEDULE_ADVICE } from "../../runtime/workflow/schedules/schedule-record.js";

/** Where an operator reads what to do about a damaged run record. */
const RUN_ADVICE =
  'restore the store from a backup to mend it; the other runs are not affected (docs/reliability.md, "The operator tools over damaged records")';

/** The item a workflow record's key names, and what to do about its damage; undefined for a key that is none of these. */
function itemOf(key: string): { item: string; advice: string } | undefined {
  const parts = key.split("/");
  if (parts[0] !== "workflow" || parts.length < 4) return undefined;
  const last = parts.slice(3).join("/");
  const run = (what: string, runId: string) => ({ item: `run ${JSON.stringify(runId)}: its ${what}`, advice: RUN_ADVICE });
  switch (parts[1]) {
    case "runs":
      return run("run record", last);
    case "steps":
      return run("step pointer", last);
    case "outcomes":
      return run("end record", last);
    case "run-index":
      return run("listing entry", last.replace(/^\d{16}/, ""));
    case "signal-wait":
      return { item: `the wait for signal ${JSON.stringify(last)}`, advice: RUN_ADVICE };
    case "groups":
      return { item: `member ${JSON.stringify(parts.slice(4).join("/"))} of a run group: its record`, advice: RUN_ADVICE };
    case "schedules":
      return { item: `schedule ${JSON.stringify(last)}: its record`, advice: DAMAGED_SCHEDULE_ADVICE(last) };
    default:
      return undefined;
  }
}

/** `key`'s damage (`detail`) in the operator's terms; undefined when the key is not a workflow record's. */
export function damageText(key: string, detail: string): string | undefined {
  const of = itemOf(key);
  return of === undefined ? undefined : `${of.item} is damaged (${detail}); ${of.advice}`;
}

const CORRUPTED = /object "([^"]+)" is corrupted \((.*)\); /s;

/**
 * `text` with the `StoreCorruptedError` message it holds (a listing's
 * reason for an item it could not read) put in the operator's terms, or as
 * it is when it holds none.
 */
export function withDamageText(text: string): string {
  const m = CORRUPTED.exec(text);
  if (m === null) return text;
  const said = damageText(m[1]!, m[2]!);
  return said === undefined ? text : `${text.slice(0, m.index)}${said}`;
}
