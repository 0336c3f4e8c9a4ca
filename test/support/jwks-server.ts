// A local stand-in for a Cloudflare Access team domain: serves a JWKS at
// /cdn-cgi/access/certs on loopback, which a test sets (POST /_control/keys
// {"keys":[...]}) and whose fetches it counts (GET /_control/fetches). The
// keys are public JWKs the test made with jose; nothing here signs.
import { createServer, type Server } from "node:http";

export interface JwksServer {
  url: string;
  stop(): Promise<void>;
}

export async function startJwksServer(): Promise<JwksServer> {
  let jwks: { keys: unknown[] } = { keys: [] };
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "GET" && req.url === "/cdn-cgi/access/certs") {
      fetches += 1;
      return send(200, jwks);
    }
    if (req.method === "GET" && req.url === "/_control/fetches") return send(200, { fetches });
    if (req.method === "POST" && req.url === "/_control/keys") {
      let text = "";
      req.on("data", (chunk) => (text += String(chunk)));
      req.on("end", () => {
        jwks = JSON.parse(text) as { keys: unknown[] };
        send(200, { keys: jwks.keys.length });
      });
      return;
    }
    send(404, { error: "not_found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the JWKS stand-in has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
