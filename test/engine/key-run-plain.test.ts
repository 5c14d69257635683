/**
 * @module Which buffers finished key runs live in. A run read through a
 * view of a resizable buffer costs a full checkpoint about a fifth more
 * CPU than one in a plain buffer (bench/RESULTS.md), so a run of a few MiB
 * built from an estimate (a freeze's) is copied into a plain one when it is
 * finished, and a merge writes into one plain buffer sized from its inputs
 * up front, never holding its output twice. A run past the copy limit keeps
 * its resizable buffer, shrunk to its bytes, instead of being held twice.
 */
import { describe, expect, it } from "vitest";
import { type KeyRun, KeyRunBuilder, RunCursor } from "../../runtime/engine/key-run.js";
import { layerOf, RunMerge } from "../../runtime/engine/run-merge.js";

const MiB = 1024 * 1024;
const key = (i: number) => `q/jobs/${String(i).padStart(10, "0")}`;
const isResizable = (run: KeyRun) => (run.bytes.buffer as ArrayBuffer & { resizable: boolean }).resizable;

/** A run of the keys `from, from + step, ...` (`n` of them) with values of `valueBytes` bytes, built as a freeze builds (from an estimate). */
function runOf(from: number, step: number, n: number, valueBytes: number, fill = (i: number) => i & 255): KeyRun {
  const b = new KeyRunBuilder(n * 48, n);
  for (let j = 0; j < n; j++) {
    const i = from + j * step;
    b.add(key(i), new Uint8Array(valueBytes).fill(fill(i)));
  }
  return b.finish();
}

/** Every live key and value of `run`, in order. */
function entriesOf(run: KeyRun): [string, string][] {
  const l = layerOf(run);
  const c = new RunCursor(run, l.live);
  const out: [string, string][] = [];
  while (c.advance()) out.push([c.keyString(), Buffer.from(run.value(c.valueAt) as Uint8Array).toString("hex")]);
  return out;
}

describe("key runs in plain buffers", () => {
  it("copies a run of a few MiB built from an estimate out of its resizable buffer, byte for byte", () => {
    const run = runOf(0, 1, 20_000, 150);
    expect(run.bytes.length).toBeGreaterThan(2 * MiB);
    expect(isResizable(run)).toBe(false);
    expect(run.bytes.byteOffset).toBe(0);
    expect(run.bytes.buffer.byteLength).toBe(run.bytes.length);
    const got = entriesOf(run);
    expect(got).toHaveLength(20_000);
    expect(got[12_345]).toEqual([key(12_345), Buffer.alloc(150, 12_345 & 255).toString("hex")]);
  });

  it("keeps a run past the copy limit in its resizable buffer, shrunk to its bytes, rather than holding it twice", () => {
    const run = runOf(0, 1, 120_000, 150);
    expect(run.bytes.length).toBeGreaterThan(16 * MiB);
    expect(isResizable(run)).toBe(true);
    expect(run.bytes.buffer.byteLength).toBe(run.bytes.length);
    expect(run.lastKey).toBe(key(119_999));
  });

  it("merges runs of several MiB into one plain buffer sized from the inputs, never grown into a resizable one", () => {
    const inputs = [0, 1, 2, 3].map((r) => layerOf(runOf(r, 4, 10_000, 150)));
    const bytesIn = inputs.reduce((n, l) => n + l.run.bytes.length, 0);
    const merge = new RunMerge(inputs);
    while (merge.step(4096));
    const out = merge.finish()!.run;
    expect(out.count).toBe(40_000);
    expect(isResizable(out)).toBe(false);
    // Written into the buffer it started with: the output's bytes lie in one allocation no larger than its bound.
    expect(out.bytes.buffer.byteLength).toBeLessThanOrEqual(bytesIn + Math.ceil(bytesIn / 8) + 1024);
    expect(Buffer.compare(out.bytes, runOf(0, 1, 40_000, 150).bytes)).toBe(0);
    expect(entriesOf(out)[29_999]).toEqual([key(29_999), Buffer.alloc(150, 29_999 & 255).toString("hex")]);
  });

  it("merges correctly past its bound, when interleaved entries no longer repeat their neighbours' values", () => {
    // Each input repeats one short value entry after entry (written once per block); interleaved, every entry
    // of the output writes its value, several times the inputs' bytes.
    const inputs = [0, 1].map((r) => layerOf(runOf(r, 2, 60_000, 20, () => r + 1)));
    const bytesIn = inputs.reduce((n, l) => n + l.run.bytes.length, 0);
    const merge = new RunMerge(inputs);
    while (merge.step(4096));
    const out = merge.finish()!.run;
    expect(out.bytes.length).toBeGreaterThan(2 * bytesIn);
    const want = runOf(0, 1, 120_000, 20, (i) => (i & 1) + 1);
    expect(Buffer.compare(out.bytes, want.bytes)).toBe(0);
    expect(entriesOf(out)[77_777]).toEqual([key(77_777), Buffer.alloc(20, 2).toString("hex")]);
  });
});
