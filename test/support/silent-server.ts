/**
 * @module A TCP server on loopback that accepts connections and never
 * answers, for tests of request timeouts.
 */
import { createServer, type Socket } from "node:net";
import { listenOnLoopback } from "./loopback-server.js";

/** Starts the server; `close` destroys the connections it holds. */
export async function startSilentServer(): Promise<{ endpoint: string; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
  });
  const listening = await listenOnLoopback(server);
  return {
    endpoint: `http://127.0.0.1:${listening.port}`,
    connections: () => accepted,
    async close() {
      for (const s of sockets) s.destroy();
      await listening.close();
    },
  };
}
