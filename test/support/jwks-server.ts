// A local stand-in for a Cloudflare Access team domain: serves a JWKS at
// /cdn-cgi/access/certs on loopback, which a test sets (POST /_control/keys
// {"keys":[...]}) and whose fetches it counts (GET /_control/fetches). The
// keys are public JWKs the test made with jose. startAccessIssuer adds a key of
// its own and signs Access assertions with it, for the e2e suites.
import { createServer, type Server } from "node:http";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

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

/** A JWKS stand-in serving one RS256 key of its own, and assertions signed with it: Cloudflare Access users for e2e tests. */
export interface AccessIssuer {
  /** The team domain (ACCESS_TEAM_DOMAIN). */
  url: string;
  /** A `Cf-Access-Jwt-Assertion` for `email`, for the audience `aud`, valid for five minutes. */
  assertion(email: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startAccessIssuer(kid: string, aud: string): Promise<AccessIssuer> {
  const jwks = await startJwksServer();
  const pair = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid, alg: "RS256", use: "sig" };
  await fetch(`${jwks.url}/_control/keys`, { method: "POST", body: JSON.stringify({ keys: [jwk] }) });
  return {
    url: jwks.url,
    assertion: (email) => {
      const now = Math.floor(Date.now() / 1_000);
      return new SignJWT({ email })
        .setProtectedHeader({ alg: "RS256", kid })
        .setIssuer(jwks.url)
        .setAudience([aud])
        .setIssuedAt(now - 5)
        .setExpirationTime(now + 300)
        .sign(pair.privateKey);
    },
    stop: () => jwks.stop(),
  };
}
