/**
 * @module The operator CLI's printing helpers: control characters in user
 * data, durations, `--since`, payload previews.
 */
import { describe, expect, it } from "vitest";
import { clean, formatAge, table } from "../../operator/cli/output.js";
import { parseSince } from "../../operator/cli/since.js";
import { previewBytes, PREVIEW_CHARS } from "../../operator/inspect/bytes-preview.js";

const io = { out() {}, err() {}, color: false };

describe("operator output", () => {
  it("replaces control characters (terminal escapes) in user data, keeping newlines and tabs", () => {
    expect(clean("run\u001b[2J\u0007-1\n\tok\u009b")).toBe("run?[2J?-1\n\tok?");
  });

  it("aligns columns by characters, a cell's newline printed as a space", () => {
    const t = table(
      io,
      ["A", "B"],
      [
        ["é\u001b", "x"],
        ["a\nb", "y"],
      ],
    ).split("\n");
    expect(t).toEqual(["A    B", "é?   x", "a b  y"]);
  });

  it("prints durations in their largest units", () => {
    expect([850, 42_000, 192_000, 5 * 3600_000 + 120_000, 2 * 86_400_000 + 4 * 3600_000, Number.NaN].map(formatAge)).toEqual([
      "850ms",
      "42s",
      "3m12s",
      "5h02m",
      "2d04h",
      "-",
    ]);
  });

  it("reads --since as a duration back from now or an ISO time, and nothing else", () => {
    const now = Date.UTC(2026, 0, 2);
    expect(parseSince("90s", now)).toBe(now - 90_000);
    expect(parseSince("2h", now)).toBe(now - 7_200_000);
    expect(parseSince("2026-01-01T00:00:00Z", now)).toBe(Date.UTC(2026, 0, 1));
    for (const bad of ["", "1", "May", "2x", "-5m", "1e30d", "9999999999d"]) expect(() => parseSince(bad, now), bad).toThrow(/--since takes/);
  });

  it("previews payloads as text or base64, bounded", () => {
    expect(previewBytes(new TextEncoder().encode('{"a":1}'))).toEqual({ size: 7, text: '{"a":1}', truncated: false });
    expect(previewBytes(new Uint8Array([0xff, 0xfe]))).toEqual({ size: 2, base64: "//4=", truncated: false });
    const huge = previewBytes(new TextEncoder().encode("é".repeat(100_000)));
    expect(huge).toMatchObject({ size: 200_000, truncated: true });
    expect(huge.text!.length).toBe(PREVIEW_CHARS);
  });
});
