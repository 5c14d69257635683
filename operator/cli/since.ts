/**
 * @module `--since` values: a duration back from now (`90s`, `15m`, `2h`,
 * `7d`) or an ISO-8601 instant, as epoch milliseconds.
 */
import { ValidationError } from "../../runtime/errors.js";

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseSince(text: string, now: number, option = "--since"): number {
  const rel = /^(\d{1,9})([smhd])$/.exec(text.trim());
  if (rel !== null) return now - Number(rel[1]) * UNITS[rel[2]!]!;
  // Only full dates: Date.parse accepts odd forms ("1", "May") that would surprise.
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isFinite(at)) return at;
  }
  throw new ValidationError(
    `${option} takes a duration back from now (90s, 15m, 2h, 7d) or an ISO-8601 time (2026-05-01T12:00:00Z), got ${JSON.stringify(text)}`,
  );
}
