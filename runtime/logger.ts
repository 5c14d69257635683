/**
 * @module The one logging hook of the queue, the workflow runtime and the
 * job runner: any object with pino-style `debug/info/warn/error(obj, msg)`
 * methods (pino itself fits as is). Missing levels are dropped, so an
 * object with only `error` still works. Also the helpers that keep secrets
 * out of log records: header redaction and bounded error fields.
 */
import { ValidationError } from "./errors.js";
import { blankCopy, callerField, callGuarded, codePointCut, describeValue, isOptionObject, showLoneSurrogates } from "./option-values.js";

/** One log method: a structured object first, then the message. */
export type LogMethod = (obj: Record<string, unknown>, msg: string) => void;

/**
 * What a `logger` option accepts. Every level is optional except `error`;
 * a level the object lacks is not logged.
 */
export interface Logger {
  debug?(obj: Record<string, unknown>, msg: string): void;
  info?(obj: Record<string, unknown>, msg: string): void;
  warn?(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

/** Where workflow worker events go; a logger such as pino's satisfies it. Kept as a name for {@link Logger}. */
export type WorkflowLogger = Logger;

/** A {@link Logger} with every level present, as the runtime calls it. */
export interface FullLogger {
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

const drop: LogMethod = () => undefined;

/**
 * Logs to `console` at `level` and above (default `warn`): the default of
 * every `logger` option.
 */
export function consoleLogger(level: LogLevel = "warn"): FullLogger {
  const min = LEVELS.indexOf(level);
  const at = (l: LogLevel, write: (...a: unknown[]) => void): LogMethod => (LEVELS.indexOf(l) >= min ? (obj, msg) => write(`taquba ${l}: ${msg}`, obj) : drop);
  return {
    debug: at("debug", console.debug),
    info: at("info", console.info),
    warn: at("warn", console.warn),
    error: at("error", console.error),
  };
}

/**
 * Fills the levels `logger` lacks with no-ops, binding each method to its
 * object (pino needs `this`); a call that throws is dropped.
 */
export function fullLogger(logger: Logger | undefined): FullLogger {
  if (logger === undefined) return consoleLogger();
  const pick = (l: LogLevel): LogMethod => {
    let m: unknown;
    try {
      m = callerField(logger, l, `logger.${l}`);
    } catch {
      // A Proxy or getter that throws: a level it cannot log at.
      return drop;
    }
    return typeof m === "function" ? bound(logger, m as (...a: unknown[]) => unknown) : drop;
  };
  return { debug: pick("debug"), info: pick("info"), warn: pick("warn"), error: pick("error") };
}

/** `m` called on `logger`; a call that throws is dropped. */
function bound(logger: object, m: (...a: unknown[]) => unknown): LogMethod {
  return (obj, msg) => {
    // Logging is best effort: a failing logger (a broken transport) must not fail the commit, claim or run that logs.
    // Nowhere left to report a failure: an async method's rejection is dropped like a throw.
    callGuarded(
      () => m.call(logger, obj, msg),
      () => undefined,
    );
  };
}

/**
 * The `logger` option at `path`, checked and each level read once (so a
 * getter cannot answer differently later): undefined when absent. Refuses
 * with a `ValidationError` naming the option a value that is not an object,
 * a level whose getter throws, a level that is not a function (or is a
 * revoked Proxy), and a missing level of `required`.
 */
export function readLogger(path: string, logger: unknown, required: readonly LogLevel[] = []): FullLogger | undefined {
  if (logger === undefined) return undefined;
  if (!isOptionObject(logger))
    throw new ValidationError(`${path} must be an object with debug/info/warn/error(obj, msg) methods (a pino logger is one), got ${describeValue(logger)}`);
  const out: FullLogger = { debug: drop, info: drop, warn: drop, error: drop };
  for (const l of LEVELS) {
    // A level set on Object.prototype is none (see `isBaseField`): any object would log through it.
    const m = callerField(logger, l, `${path}.${l}`);
    if (m === undefined && !required.includes(l)) continue;
    // A revoked Proxy of a function is still typeof "function", and throws at every call.
    if (typeof m !== "function" || isRevoked(m))
      throw new ValidationError(`${path}.${l} must be a function (obj, msg) => void, got ${isRevoked(m) ? "a revoked Proxy" : describeValue(m)}`);
    out[l] = bound(logger, m as (...a: unknown[]) => unknown);
  }
  return out;
}

function isRevoked(v: unknown): boolean {
  try {
    Array.isArray(v);
    return false;
  } catch {
    return true;
  }
}

/** What replaces a sensitive header's value in logs and spans. */
export const REDACTED = "[redacted]";

/**
 * A copy of `headers` for a log record or span: the values of the header
 * names in `sensitive` (compared case-insensitively) are replaced. The copy
 * inherits nothing, so a header named `__proto__` stays a header instead of
 * setting the copy's prototype.
 */
export function redactHeaders(headers: Readonly<Record<string, string>>, sensitive: ReadonlySet<string>): Record<string, string> {
  const out = blankCopy<Record<string, string>>();
  for (const [k, v] of Object.entries(headers)) out[k] = sensitive.has(k.toLowerCase()) ? REDACTED : v;
  return out;
}

/** Longest stack kept in an attempt history entry or a log record. */
export const MAX_STACK_CHARS = 4096;
/** Longest error message kept. */
export const MAX_MESSAGE_CHARS = 2048;

/** An error's name, message and stack, each bounded; safe to store and log. */
export interface ErrorFields {
  name: string;
  message: string;
  stack?: string;
}

/** `s` cut to `max` characters, saying how many were cut, its lone surrogates written as escapes (UTF-8 cannot store them). */
export function boundText(s: string, max: number): string {
  if (s.length <= max) return showLoneSurrogates(s);
  const end = codePointCut(s, max);
  return showLoneSurrogates(`${s.slice(0, end)}… (${s.length - end} more characters)`);
}

/** The bounded {@link ErrorFields} of anything thrown. */
export function errorFields(e: unknown): ErrorFields {
  if (e instanceof Error) {
    const f: ErrorFields = { name: boundText(e.name, 200), message: boundText(e.message, MAX_MESSAGE_CHARS) };
    if (typeof e.stack === "string") f.stack = boundText(e.stack, MAX_STACK_CHARS);
    return f;
  }
  return { name: "NonError", message: boundText(String(e), MAX_MESSAGE_CHARS) };
}
