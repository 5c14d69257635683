/**
 * @module Hostile arguments for the tables that attack exported functions
 * (test/foundation and test/codegen): the values, and a walk that puts each
 * in every argument position in turn and says what escaped.
 */
import { TaqubaError } from "taquba";

const revoked = Proxy.revocable({}, {});
revoked.revoke();
const unreadable = new Proxy(
  {},
  {
    get() {
      throw new Error("every read throws");
    },
  },
);

/** Values no exported function may answer with a raw error, a hang or a non-integer number. */
export const HOSTILE_VALUES: readonly unknown[] = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  1e30,
  -0,
  5n,
  Symbol("s"),
  revoked.proxy,
  unreadable,
  "x".repeat(10 * 1024 * 1024),
  { "\uD800": "\uDC00" },
  "\uD800",
];

/** What calling `fn` with `args` did (a promise's settlement included): "ok", "typed", or what escaped. */
async function outcome(fn: (...args: never[]) => unknown, args: unknown[]): Promise<string> {
  try {
    const r = await Reflect.apply(fn, undefined, args);
    if (typeof r === "number" && !Number.isInteger(r)) return `answered ${r}`;
    return "ok";
  } catch (err) {
    return err instanceof TaqubaError
      ? "typed"
      : `${err instanceof Error ? err.constructor.name : typeof err}: ${String(err instanceof Error ? err.message : "").slice(0, 120)}`;
  }
}

/**
 * Calls `fn` with each of `hostile` in each of the first `arity` argument
 * positions, the others holding `fill`: what escaped (a raw error, a
 * non-integer answer) or took near a second of CPU (a 10 MB string walked
 * as an object or spread into characters took seconds to minutes). CPU
 * time, not wall time: other work on the machine must not make a quick
 * refusal look slow.
 */
export async function hostileEscapes(
  fn: (...args: never[]) => unknown,
  fill: readonly unknown[],
  arity: number,
  hostile: readonly unknown[] = HOSTILE_VALUES,
): Promise<string[]> {
  const escaped: string[] = [];
  for (let pos = 0; pos < arity; pos++) {
    for (const [i, bad] of hostile.entries()) {
      const args = [...fill.slice(0, arity)];
      args[pos] = bad;
      const started = process.cpuUsage();
      const what = await outcome(fn, args);
      const used = process.cpuUsage(started);
      const ms = (used.user + used.system) / 1000;
      if (what !== "ok" && what !== "typed") escaped.push(`argument ${pos} = hostile #${i}: ${what}`);
      if (ms > 1000) escaped.push(`argument ${pos} = hostile #${i}: took ${Math.round(ms)} ms of CPU`);
    }
  }
  return escaped;
}
