/**
 * @module The shape of an operator command. Each command group lives in
 * its own file under commands/ and exports its commands; commands/index.ts
 * lists the groups, one line each. `main` parses the shared options, opens
 * what a command needs on demand, and maps errors to exit codes.
 */
import type { OperatorIo } from "./output.js";
import type { OperatorSession } from "./session.js";

/** An option of one command, beside the shared ones (`--name`, `--step-queue`, `--json`). */
export interface CommandOption {
  readonly type: "string" | "boolean";
  /** What the option does, one line, for the usage text. */
  readonly description: string;
  /** The value's placeholder in the usage text (string options), e.g. `STATE`. */
  readonly value?: string;
  readonly short?: string;
  /** Whether the option may repeat (its values then arrive as an array). */
  readonly multiple?: boolean;
}

/** What a command receives. */
export interface CommandContext {
  readonly io: OperatorIo;
  /** The operands after the store URL, as given. */
  readonly operands: readonly string[];
  /** Values of the command's own options, by name, as `parseArgs` returns them. */
  readonly options: Readonly<Record<string, string | boolean | string[] | boolean[] | undefined>>;
  /** Whether to print one JSON document instead of human output. */
  readonly json: boolean;
  /** The store, its read view and a client, opened on first use. */
  readonly session: OperatorSession;
}

export interface Command {
  /** The words after `taquba`, e.g. `["runs", "list"]`. */
  readonly path: readonly string[];
  /** The operands after the store URL, for the usage text, e.g. `<runId>`. Empty when none. */
  readonly operands: string;
  /** How many operands the command takes, at least and at most. */
  readonly arity: readonly [min: number, max: number];
  /** One line on what the command does. */
  readonly summary: string;
  readonly options?: Readonly<Record<string, CommandOption>>;
  /**
   * Whether the command reads `--json` as its own string option (a
   * payload) rather than the shared "print JSON" switch.
   */
  readonly ownsJsonOption?: boolean;
  /** Does the work; resolves to an exit code (see exit-codes.ts). */
  run(ctx: CommandContext): Promise<number>;
}

/** A string option's value, or undefined; throws `UsageError` when repeated. */
export function stringOption(ctx: CommandContext, name: string): string | undefined {
  const v = ctx.options[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new UsageError(`--${name} takes one value`);
  return v;
}

/** A bad command line: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
