/**
 * @module The operator command line: `taquba <command> <store-url> [operands] [options]`.
 *
 * Reads through a read-only view of the owner's durable state and writes
 * through `TaqubaClient` (the owner applies each command), so it runs
 * beside a live owner and needs no server. Exit codes: exit-codes.ts.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { StoreCorruptedError, TaqubaError } from "../../runtime/errors.js";
import { corruptionText, withDamageText } from "../inspect/damage-text.js";
import { DEFAULT_STEP_QUEUE } from "../../runtime/workflow/runs/workflow-view.js";
import { RedriveRefusedError } from "../inspect/operations.js";
import { COMMANDS } from "./commands/index.js";
import { EXIT } from "./exit-codes.js";
import { clean, processIo, type OperatorIo } from "./output.js";
import { UsageError, type Command, type CommandOption } from "./registry.js";
import { NoSuchStoreError, OperatorSession, positiveInt } from "./session.js";

export { EXIT } from "./exit-codes.js";
export type { OperatorIo } from "./output.js";

/** Options every command takes. */
const SHARED: Readonly<Record<string, CommandOption>> = {
  name: { type: "string", value: "NAME", description: "the name the owner gave Queue.open (or TAQUBA_NAME)" },
  "step-queue": { type: "string", value: "QUEUE", description: `the owner's step queue (default: ${DEFAULT_STEP_QUEUE})` },
  "memo-prefix": { type: "string", value: "PREFIX", description: "the owner's memo prefix, when it set one (default: QUEUE-memo)" },
  timeout: { type: "string", value: "MS", description: "how long a write waits for the owner's answer (default: 30000)" },
  json: { type: "boolean", description: "print one JSON document instead of tables" },
  help: { type: "boolean", short: "h", description: "print this command's usage" },
};

/** The generator's commands, which bin.js runs without loading this module. */
const GENERATOR_LINES: readonly (readonly [string, string])[] = [
  ["taquba init [dir]", "start a project (see taquba codegen --help)"],
  ["taquba codegen [paths...] [options]", "generate typed code from specs (see taquba codegen --help)"],
];

function commandLine(c: Command): string {
  return `taquba ${c.path.join(" ")} <store-url>${c.operands === "" ? "" : ` ${c.operands}`}`;
}

/** Every command, one line each. */
export function overview(commands: readonly Command[] = COMMANDS): string {
  const lines = [...commands.map((c) => [commandLine(c), c.summary] as const), ...GENERATOR_LINES];
  const width = Math.max(...lines.map(([l]) => l.length));
  return [
    "usage: taquba <command> <store-url> [operands] [options]",
    "",
    ...lines.map(([l, s]) => `  ${l.padEnd(width)}  ${s}`),
    "",
    "  <store-url>  file:///absolute/dir or s3://bucket/prefix (AWS settings from the environment)",
    "  common options: --name NAME (required), --step-queue QUEUE, --json; taquba <command> --help for more",
    "  exit codes: 0 done, 1 failed, 2 bad usage, 3 not found, 4 not applicable to the object's state",
  ].join("\n");
}

function optionLines(options: Readonly<Record<string, CommandOption>>): string[] {
  const entries = Object.entries(options).map(([name, o]) => [`--${name}${o.type === "string" ? ` ${o.value ?? "VALUE"}` : ""}`, o.description] as const);
  const width = Math.max(...entries.map(([l]) => l.length)) + 2;
  return entries.map(([l, d]) => `  ${l.padEnd(width)} ${d}`);
}

/** One command's usage: its line, its own options, the shared ones. */
export function commandUsage(c: Command): string {
  const shared = c.ownsJsonOption ? Object.fromEntries(Object.entries(SHARED).filter(([n]) => n !== "json")) : SHARED;
  return [`usage: ${commandLine(c)} [options]`, `  ${c.summary}`, "", ...optionLines({ ...(c.options ?? {}), ...shared })].join("\n");
}

/** The command whose path the arguments start with (the longest match). */
function findCommand(argv: readonly string[], commands: readonly Command[]): Command | undefined {
  let best: Command | undefined;
  for (const c of commands) {
    if (c.path.every((w, i) => argv[i] === w) && (best === undefined || c.path.length > best.path.length)) best = c;
  }
  return best;
}

function parseConfig(c: Command): ParseArgsConfig["options"] {
  const all = { ...SHARED, ...(c.options ?? {}) };
  const out: NonNullable<ParseArgsConfig["options"]> = {};
  for (const [name, o] of Object.entries(all)) {
    out[name] = { type: o.type, ...(o.short === undefined ? {} : { short: o.short }), ...(o.multiple ? { multiple: true } : {}) };
  }
  return out;
}

/** The exit code and the line to print for an error a command threw. */
export function describeError(e: unknown): { code: number; message: string } {
  const damage = e instanceof StoreCorruptedError ? corruptionText(e) : undefined;
  const message = clean(damage ?? withDamageText(e instanceof Error ? e.message : String(e)));
  if (e instanceof UsageError) return { code: EXIT.usage, message };
  if (e instanceof NoSuchStoreError) return { code: EXIT.notFound, message };
  if (e instanceof RedriveRefusedError) return { code: e.reason === "not_found" ? EXIT.notFound : EXIT.refused, message };
  if (e instanceof TaqubaError) {
    if (e.code === "VALIDATION" || e.code === "INVALID_RUN_ID" || e.code === "INPUT_MISMATCH") return { code: EXIT.usage, message };
    if (e.code.endsWith("_NOT_FOUND")) return { code: EXIT.notFound, message };
    if (e.code === "RUN_NOT_RETRYABLE" || e.code === "RUN_NOT_DAMAGED" || e.code === "REPAIR_PLAN_CHANGED" || e.code === "STATS_PLAN_CHANGED")
      return { code: EXIT.refused, message };
    return { code: EXIT.failed, message };
  }
  return { code: EXIT.failed, message };
}

/** Runs the operator CLI with `argv` (without node and the script). Resolves to the exit code. */
export async function main(argv: readonly string[], io: OperatorIo = processIo(), commands: readonly Command[] = COMMANDS): Promise<number> {
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    (argv.length === 0 ? io.err : io.out)(overview(commands));
    return argv.length === 0 ? EXIT.usage : EXIT.ok;
  }
  const command = findCommand(argv, commands);
  if (command === undefined) {
    const group = commands.filter((c) => c.path[0] === argv[0]);
    if (group.length > 0) {
      io.err(`taquba ${clean(argv[0] ?? "")} needs one of: ${group.map((c) => c.path.slice(1).join(" ")).join(", ")}\n\n${overview(group)}`);
    } else io.err(`unknown command ${JSON.stringify(clean(argv.join(" ")))}\n\n${overview(commands)}`);
    return EXIT.usage;
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv.slice(command.path.length) as string[], options: parseConfig(command), allowPositionals: true, strict: true });
  } catch (e) {
    io.err(`${clean(e instanceof Error ? e.message : String(e))}\n\n${commandUsage(command)}`);
    return EXIT.usage;
  }
  const values = parsed.values as Record<string, string | boolean | string[] | boolean[] | undefined>;
  if (values["help"] === true) {
    io.out(commandUsage(command));
    return EXIT.ok;
  }
  const [storeUrl, ...operands] = parsed.positionals;
  const name = typeof values["name"] === "string" ? values["name"] : process.env["TAQUBA_NAME"];
  const problem =
    storeUrl === undefined
      ? "the store URL is missing"
      : name === undefined || name === ""
        ? "--name is missing: give the name the owner passed to Queue.open"
        : operands.length < command.arity[0] || operands.length > command.arity[1]
          ? `expected ${command.operands === "" ? "no operands" : command.operands} after the store URL, got ${operands.length === 0 ? "none" : operands.map((o) => JSON.stringify(clean(o))).join(" ")}`
          : undefined;
  if (problem !== undefined || storeUrl === undefined || name === undefined) {
    io.err(`${problem}\n\n${commandUsage(command)}`);
    return EXIT.usage;
  }
  let session: OperatorSession | undefined;
  try {
    const stepQueue = typeof values["step-queue"] === "string" ? values["step-queue"] : DEFAULT_STEP_QUEUE;
    const memoPrefix = typeof values["memo-prefix"] === "string" ? values["memo-prefix"] : undefined;
    const timeoutMs = positiveInt("timeout", typeof values["timeout"] === "string" ? values["timeout"] : undefined, 24 * 3600 * 1000);
    session = new OperatorSession({
      storeUrl,
      name,
      stepQueue,
      ...(memoPrefix === undefined ? {} : { memoPrefix }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
    const own = Object.fromEntries(Object.keys(command.options ?? {}).map((k) => [k, values[k]]));
    return await command.run({
      io,
      operands,
      options: own,
      json: command.ownsJsonOption ? false : values["json"] === true,
      session,
    });
  } catch (e) {
    const { code, message } = describeError(e);
    io.err(code === EXIT.usage && e instanceof UsageError ? `${message}\n\n${commandUsage(command)}` : message);
    return code;
  } finally {
    await session?.close();
  }
}
