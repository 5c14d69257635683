/**
 * Rejections no handler took, for tests that check a hostile callback
 * leaves none behind (an unhandled rejection ends a Node process by
 * default). Call at a test file's top level; each test starts watching
 * with `watch()`, and the watch ends with the test.
 */
import { afterEach } from "vitest";

export interface UnhandledRejections {
  /** What was left unhandled since `watch()` in this test. */
  readonly seen: unknown[];
  watch(): void;
}

export function unhandledRejections(): UnhandledRejections {
  const seen: unknown[] = [];
  const record = (reason: unknown) => seen.push(reason);
  afterEach(() => {
    process.off("unhandledRejection", record);
    seen.length = 0;
  });
  return { seen, watch: () => process.on("unhandledRejection", record) };
}

/** Lets `n` macrotask turns pass: time for stray rejections to surface. */
export async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}
