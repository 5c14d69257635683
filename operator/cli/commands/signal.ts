/**
 * @module `taquba signal <key> --json '<payload>' | --file <path>`: sends
 * a signal through the owner, delivered to the step waiting on the key or
 * buffered for the next one.
 */
import { readFile } from "node:fs/promises";
import { ValidationError } from "../../../runtime/errors.js";
import { MAX_SIGNAL_PAYLOAD_BYTES } from "../../../runtime/workflow/limits.js";
import { encodeJsonPayload } from "../../inspect/json-payload.js";
import { EXIT } from "../exit-codes.js";
import { clean, toJson } from "../output.js";
import { stringOption, UsageError, type Command } from "../registry.js";

/** The payload bytes from `--json` (checked JSON, sent compact, as typed signals encode it) or `--file` (raw bytes; `-` reads stdin). */
export async function signalPayload(jsonText: string | undefined, file: string | undefined): Promise<Uint8Array> {
  if ((jsonText === undefined) === (file === undefined)) throw new UsageError("give the payload with exactly one of --json '<payload>' or --file <path>");
  if (jsonText !== undefined) return encodeJsonPayload(jsonText, "--json");
  const path = file!;
  const bytes = path === "-" ? await readStdin() : new Uint8Array(await readFile(path));
  if (bytes.byteLength > MAX_SIGNAL_PAYLOAD_BYTES) {
    throw new ValidationError(
      `the payload in ${path === "-" ? "stdin" : path} has ${bytes.byteLength} bytes; a signal payload holds at most ${MAX_SIGNAL_PAYLOAD_BYTES}`,
    );
  }
  return bytes;
}

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of process.stdin as AsyncIterable<Buffer>) {
    size += c.byteLength;
    // Stop reading early: the limit check follows.
    if (size > MAX_SIGNAL_PAYLOAD_BYTES + 1) break;
    chunks.push(c);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

const signal: Command = {
  path: ["signal"],
  operands: "<key>",
  arity: [1, 1],
  summary: "send a signal: delivered to the step waiting on <key>, or buffered for the next one",
  ownsJsonOption: true,
  options: {
    json: { type: "string", value: "PAYLOAD", description: "the payload as JSON text (what typed signals carry)" },
    file: { type: "string", value: "PATH", description: "the payload's bytes from a file (- for stdin)" },
    output: { type: "string", value: "FORMAT", description: "`json` prints the outcome as JSON" },
  },
  async run(ctx) {
    const key = ctx.operands[0]!;
    const payload = await signalPayload(stringOption(ctx, "json"), stringOption(ctx, "file"));
    const output = stringOption(ctx, "output");
    if (output !== undefined && output !== "json") throw new UsageError(`--output takes "json", got ${JSON.stringify(output)}`);
    const outcome = await (await ctx.session.client()).signal(key, payload);
    if (output === "json") ctx.io.out(toJson({ key, outcome, bytes: payload.byteLength }));
    else ctx.io.out(`signal ${JSON.stringify(clean(key))} ${outcome} (${payload.byteLength} bytes)`);
    return EXIT.ok;
  },
};

export const signalCommands: readonly Command[] = [signal];
