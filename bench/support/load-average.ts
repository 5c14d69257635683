/**
 * @module The machine's load, as benchmark reports print it beside their figures.
 */
import { loadavg } from "node:os";

/** The 1, 5 and 15 minute load averages, two decimals each. */
export function loadAverageText(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
}
