/**
 * @module Instructions per unit of a bench's measured window under
 * callgrind, with the process's start and warm-up run uninstrumented
 * (`--instr-atstart=no`): runs the bench under valgrind with `GATE` set,
 * and when the bench opens its window (bench/support/callgrind-gate.ts)
 * turns instrumentation on (`callgrind_control -i on`), then off when it
 * closes it; prints the window's instructions and their count per unit
 * (the units the bench names: steps, acks). One run per checkout, not two
 * N: the window holds only warm work, so nothing is left to subtract.
 *
 * Benches with a window: bench/step-instructions.ts (`WARM` runs before
 * it, N runs in it, units are steps), bench/chained-ack-instructions.ts
 * (`WARM` steps per chain before it, STEPS in it, units are acks). Bundle
 * the bench as its module says, then
 * `N=60 WARM=100 npx tsx bench/callgrind-gated.ts <out.cg> node --single-threaded --no-concurrent-recompilation bench/.out/step-instructions.mjs <checkout>`.
 * Keep `<out.cg>` for bench/callgrind-parts.ts (a window against a window:
 * give it 1 as the runs between them and divide by the units yourself).
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [out, ...cmd] = process.argv.slice(2);
if (out === undefined || cmd.length === 0) throw new Error("usage: callgrind-gated.ts <out.cg> <command...>");
const gate = join(tmpdir(), `callgrind-gate-${process.pid}`);
rmSync(gate, { force: true });

const child = spawn("valgrind", ["--tool=callgrind", "--instr-atstart=no", `--callgrind-out-file=${out}`, ...cmd], {
  env: { ...process.env, GATE: gate },
  stdio: ["ignore", "pipe", "inherit"],
});
let units: number | undefined;
const started = Date.now();
for await (const line of createInterface({ input: child.stdout })) {
  const m = /^gate: (open|close) (\d+)(?: (\d+))?$/.exec(line);
  if (m === null) {
    console.log(line);
    continue;
  }
  // The command reaches the process when it next polls (its timer's wake-up): made before the gate file, so the window starts after it.
  execFileSync("callgrind_control", ["-i", m[1] === "open" ? "on" : "off", m[2]!], { stdio: "ignore" });
  if (m[1] === "open") writeFileSync(gate, "");
  else {
    units = Number(m[3]);
    rmSync(gate, { force: true });
  }
  console.log(`${line} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
const code = await new Promise<number | null>((r) => child.on("close", r));
if (code !== 0) throw new Error(`the bench exited with ${code}`);
const totals = /^totals: (\d+)/m.exec(readFileSync(out, "utf8"));
if (totals === null) throw new Error(`no totals in ${out}`);
const ir = Number(totals[1]);
console.log(`window: ${ir} instructions${units === undefined ? "" : `, ${units} units, ${(ir / units).toFixed(0)} per unit`}`);
