/**
 * @module `Queue.open`'s options read once, before any IO: each field is
 * asked for once (a getter or a Proxy answering differently on a second
 * read cannot slip past the checks), one that throws becomes a
 * `ValidationError` naming it, and the queue settings are copied as plain
 * data, so what was checked is what the queue runs with.
 */
import { type Clock, timedClock } from "../clock.js";
import { validateEngineOptions } from "../engine/engine-options.js";
import type { EngineOptions } from "../engine/engine.js";
import { ValidationError } from "../errors.js";
import { describeValue, errorText, hasMethods, isOptionObject, optionFields, quoteValue, readExactOptions } from "../option-values.js";
import { readLogger } from "../logger.js";
import type { OpenOptions } from "./config.js";
import { JOB } from "./keys.js";

const KEYS = optionFields<OpenOptions>({
  clock: true,
  defaultQueueConfig: true,
  queueConfigs: true,
  flushIntervalMs: true,
  payloadOffloadBytes: true,
  maxPayloadBytes: true,
  logger: true,
  onDeadLettered: true,
  onClosed: true,
  recordCacheBytes: true,
  engineOptions: true,
});

/** Plain data only (numbers, strings, objects, arrays): a copy the caller cannot change afterwards. */
function plainCopy(name: string, v: unknown): unknown {
  if (v === undefined) return undefined;
  if (!isOptionObject(v)) throw new ValidationError(`OpenOptions.${name} must be an object, got ${describeValue(v)}`);
  try {
    return structuredClone(v);
  } catch (err) {
    throw new ValidationError(`OpenOptions.${name} must be plain data (objects of numbers and strings), and reading it failed: ${errorText(err)}`);
  }
}

/**
 * `given` checked for shape and copied (every field read once); throws
 * `ValidationError` when it is not an object, a field cannot be read, or a
 * callback, logger, clock or set of engine options is not the kind of value
 * it must be. The values themselves are checked where they are used.
 */
export function readOpenOptions(given: unknown): OpenOptions {
  if (given === undefined) return {};
  const out: Record<string, unknown> = readExactOptions(given, KEYS, "OpenOptions", "Queue.open options");
  out.defaultQueueConfig = plainCopy("defaultQueueConfig", out.defaultQueueConfig);
  out.queueConfigs = plainCopy("queueConfigs", out.queueConfigs);
  for (const k of ["onDeadLettered", "onClosed"] as const) {
    if (out[k] !== undefined && typeof out[k] !== "function") throw new ValidationError(`OpenOptions.${k} must be a function, got ${describeValue(out[k])}`);
  }
  const logger = readLogger("OpenOptions.logger", out.logger);
  if (logger === undefined) delete out.logger;
  else out.logger = logger;
  const clock = out.clock;
  if (clock !== undefined && !hasMethods(clock, ["now"])) {
    throw new ValidationError(`OpenOptions.clock must be an object with a now() method, got ${describeValue(clock)}`);
  }
  if (clock !== undefined) {
    // Read once now, as the engine's options are: a clock that reads no time would fail the open later with whatever it threw.
    try {
      timedClock(clock as Clock).now();
    } catch (err) {
      if (err instanceof ValidationError) throw err;
      throw new ValidationError(`OpenOptions.clock.now() threw: ${errorText(err)}`);
    }
  }
  // Read once here too: the queue's engine runs with this copy.
  if (out.engineOptions !== undefined) {
    const engine = validateEngineOptions(out.engineOptions as EngineOptions, "OpenOptions.engineOptions");
    checkPagedPrefixes(engine);
    out.engineOptions = engine;
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out as OpenOptions;
}

/**
 * The queue warms job records before it reads them and reads every other
 * key synchronously (indexes, counters, caller KV): a value paged out under
 * any other prefix would fail such a read later with `ValueNotWarmedError`.
 * So only prefixes inside the job records (`j/`) may be paged.
 */
function checkPagedPrefixes(engine: EngineOptions): void {
  const prefixes = engine.pageValues?.keyPrefixes ?? [];
  const outside = prefixes.filter((p) => !p.startsWith(JOB));
  if (outside.length === 0) return;
  throw new ValidationError(
    `OpenOptions.engineOptions.pageValues.keyPrefixes may only name job records (prefixes starting with ${quoteValue(JOB)}), got ${outside
      .slice(0, 3)
      .map(quoteValue)
      .join(
        ", ",
      )}${outside.length > 3 ? ` and ${outside.length - 3} more` : ""}: the queue reads its other keys without loading them first. Use ${quoteValue(JOB)}, or leave pageValues out and size the record cache with recordCacheBytes`,
  );
}
