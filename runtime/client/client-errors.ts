/**
 * @module Errors particular to `TaqubaClient`.
 */
import { TaqubaError } from "../errors.js";
import { instantText } from "../time-bounds.js";

/**
 * A group's members were sent for submission dated with a creation time
 * its manifest does not have: the group was forgotten and submitted again
 * (or removed by group retention and made anew) after this submission
 * read its creation time. No member was submitted; submitting the members
 * again adds them to the group as it is now.
 */
export class GroupRecreatedError extends TaqubaError {
  constructor(
    readonly groupId: string,
    /** The creation time the submission carried. */
    readonly createdAtMs: number,
    /** The creation time in the group's manifest. */
    readonly manifestCreatedAtMs: number,
  ) {
    super(
      "GROUP_RECREATED",
      `run group "${groupId}" was created again since this submission of its members began (the submission is for the group created at ${instantText(createdAtMs)}, the group now dates from ${instantText(manifestCreatedAtMs)}); no member was submitted: submit the members again`,
    );
  }
}

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
