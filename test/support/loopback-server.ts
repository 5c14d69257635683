/**
 * @module HTTP(S) servers on the loopback interface for tests that make real
 * requests: start on an ephemeral port, read whole request bodies.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Server } from "node:net";

/**
 * A loopback port where a connection is refused and stays refused: below
 * 1024, outside the range the system hands out for port 0, so no other
 * test (they all listen on port 0) can bind it meanwhile, as could happen
 * to a port just closed.
 */
export const REFUSING_PORT = 1;

/** Starts `server` on 127.0.0.1 at a port the system picks. */
export async function listenOnLoopback(server: Server): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A request listener that reads the whole body before calling `handle`. */
export function withBody(handle: (req: IncomingMessage, body: Buffer, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handle(req, Buffer.concat(chunks), res));
  };
}
