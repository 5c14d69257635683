/**
 * @module Errors particular to `TaqubaClient`.
 */
import { TaqubaError } from "../errors.js";

/**
 * No owner answered a client's request in time: no process is serving the
 * inbox (see `serveClients`), or it is far behind. The request stays in the
 * inbox and is applied when an owner serves it; asking again with the same
 * arguments is safe for idempotent requests (a submission with a run id).
 */
export class TimeoutError extends TaqubaError {
  constructor(
    readonly requestId: string,
    what: string,
    timeoutMs: number,
    storeName: string,
  ) {
    super(
      "CLIENT_TIMEOUT",
      `no owner answered the ${what} within ${timeoutMs} ms: no process seems to serve the client inbox of queue store "${storeName}" (serveClients in the process that opened the queue); the request stays in the inbox and is applied when an owner starts (request ${requestId})`,
      { retryable: true },
    );
  }
}
