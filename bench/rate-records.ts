/**
 * @module Rate records: what the durable rate windows add to a claim.
 *
 * For each setup, enqueues JOBS (default 1000) jobs over TENANTS (default
 * 10) keys, then claims them one by one, each claim followed by a flush
 * (one WAL object per claim commit), and counts the store's puts and bytes
 * for the claims alone. A queue without a rate limit writes no window; a
 * rate-limited one rewrites its key's window in the same commit, whose
 * size grows with the claim times kept (at most 32 per key).
 */
import { loadavg } from "node:os";
import { FLOW_RATE_KEY_HEADER, FLOW_RULE_HEADER, MemoryStore, MockClock, Queue, withCounting, type QueueConfig } from "../runtime/index.js";

const JOBS = Number(process.env.JOBS ?? 1000);
const TENANTS = Number(process.env.TENANTS ?? 10);
const PAYLOAD = new Uint8Array(64).fill(1);

async function run(name: string, config: QueueConfig, rule: { limit: number } | undefined): Promise<void> {
  const store = withCounting(new MemoryStore());
  const clock = new MockClock(1_700_000_000_000);
  const queue = await Queue.open(store, "bench", { clock, flushIntervalMs: 0, queueConfigs: { q: config } });
  if (rule !== undefined) queue.defineFlowRules("q", { r: { rateLimit: { limit: rule.limit, periodMs: 3_600_000 } } });
  for (let i = 0; i < JOBS; i++) {
    const tenant = `tenant-${i % TENANTS}`;
    const headers: Record<string, string> = rule === undefined ? { tenant } : { tenant, [FLOW_RULE_HEADER]: "r", [FLOW_RATE_KEY_HEADER]: tenant };
    await queue.enqueue("q", PAYLOAD, { headers });
  }
  await queue.flush();
  store.reset();
  const before = { ...store.counts };
  const claimed = [];
  for (let i = 0; i < JOBS; i++) {
    clock.advance(1);
    const j = await queue.claim("q");
    if (j === null) break;
    claimed.push(j);
    await queue.flush();
  }
  const puts = store.counts.puts - before.puts;
  const bytes = store.counts.bytesIn - before.bytesIn;
  console.log(
    `${name.padEnd(44)} claims ${String(claimed.length).padStart(5)}  puts/claim ${(puts / claimed.length).toFixed(2)}  bytes/claim ${(bytes / claimed.length).toFixed(0).padStart(5)}`,
  );
  for (const j of claimed) await queue.ack(j);
  await queue.close();
}

console.log(
  `rate records: JOBS=${JOBS} TENANTS=${TENANTS} node ${process.version} load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await run("no rate limit", {}, undefined);
await run("queue rateLimit limit 5 per hour, {tenant}", { rateLimit: { limit: 5, periodMs: 3_600_000, key: "{tenant}" } }, undefined);
await run("queue rateLimit limit 1000 per hour, {tenant}", { rateLimit: { limit: 1000, periodMs: 3_600_000, key: "{tenant}" } }, undefined);
await run("flow rule rateLimit limit 5 per hour", {}, { limit: 5 });
await run("flow rule rateLimit limit 1000 per hour", {}, { limit: 1000 });
