// A loopback TCP proxy in front of the Worker that can cut every open
// connection, as a flaky network would, and records each request's head so a
// test can see what a client sent when it reconnected (Last-Event-ID).
import { createServer, connect, type Server, type Socket } from "node:net";

export interface CuttingProxy {
  url: string;
  /** Request heads seen, in order of arrival. */
  requests: string[];
  /** Destroys every open client and upstream socket. */
  cutAll(): void;
  close(): Promise<void>;
}

export async function startCuttingProxy(target: URL): Promise<CuttingProxy> {
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let head = "";
    client.on("data", (chunk) => {
      if (head.length < 8192) {
        head += chunk.toString("latin1");
        const end = head.indexOf("\r\n\r\n");
        if (end >= 0) {
          requests.push(head.slice(0, end));
          head = "x".repeat(8192); // one head per connection is enough for these tests
        }
      }
    });
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    cutAll: () => {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
