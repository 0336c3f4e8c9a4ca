// The redaction module (contract section 17): key names in every style, header
// pairs, credentials recognisable on their own, free text, bounded depth; and
// two properties: redaction is idempotent, and a planted secret never survives.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";
import { isSecretKey, MAX_REDACTION_DEPTH, REDACTED, redactSecrets, redactText } from "../../src/execution/redaction";

const RUNS = Number(env.FUZZ_RUNS || 300);

describe("isSecretKey", () => {
  it.each([
    "token",
    "TOKEN",
    "access_token",
    "refreshToken",
    "X-Auth-Token",
    "secret",
    "client_secret",
    "clientSecret",
    "CLIENT-SECRET",
    "password",
    "Password",
    "db.password",
    "passwd",
    "pwd",
    "dbPwd",
    "pass",
    "user_pass",
    "PassHash",
    "api key",
    "api_key",
    "apiKey",
    "APIKey",
    "APIKEY",
    "x-api-key",
    "access key",
    "accessKeyId",
    "secretAccessKey",
    "private key",
    "private_key",
    "privateKey",
    "PRIVATEKEY",
    "authorization",
    "Proxy-Authorization",
    "authorisation",
    "bearer",
    "bearerToken",
    "cookie",
    "Set-Cookie",
    "session",
    "sessionId",
    "SESSION_ID",
    "signature",
    "X-Hub-Signature-256",
    "sig",
    "url_sig",
    "credential",
    "credentials",
    "awsCredentials",
    "creds",
    "passphrase",
    "jwt",
    "csrf",
  ])("names a credential: %s", (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  // Decided: words that merely contain a short stem are not credentials. A count such as
  // tokens_used IS redacted (the "token" stem); that costs a reader a number, never a secret.
  it.each([
    "passage",
    "compass",
    "bypass",
    "passenger",
    "description",
    "tokenizer",
    "tokenize",
    "design",
    "signal",
    "assign",
    "key",
    "public_key",
    "monkey",
    "author",
    "authority",
    "title",
    "secretary",
    "username",
    "url",
  ])("does not name a credential: %s", (key) => {
    expect(isSecretKey(key)).toBe(false);
  });
});

describe("redactSecrets", () => {
  it("replaces secret-looking values at any depth and keeps everything else", () => {
    const input = {
      title: "Latency",
      api_key: "k-1",
      headers: { Authorization: "Bearer x", "X-Trace": "t" },
      nested: [{ password: { deep: 1 } }, { apiKey: "a", "api-key": "b", session_cookie: "c", refreshToken: "r", client_secret: "s" }],
      count: 5,
      auth: { user: "bob", pwd: "p" },
      description: "passage of time",
    };
    expect(redactSecrets(input)).toEqual({
      title: "Latency",
      api_key: REDACTED,
      headers: { Authorization: REDACTED, "X-Trace": "t" },
      nested: [
        { password: REDACTED },
        { apiKey: REDACTED, "api-key": REDACTED, session_cookie: REDACTED, refreshToken: REDACTED, client_secret: REDACTED },
      ],
      count: 5,
      auth: { user: "bob", pwd: REDACTED },
      description: "passage of time",
    });
    expect(input.api_key).toBe("k-1"); // the original is untouched
  });

  it("redacts a scalar auth value but walks an auth object", () => {
    expect(redactSecrets({ auth: "abc123" })).toEqual({ auth: REDACTED });
    expect(redactSecrets({ auth: { user: "u" } })).toEqual({ auth: { user: "u" } });
  });

  it("redacts header pairs given as arrays and as name/value objects", () => {
    expect(
      redactSecrets({
        headers: [
          ["Authorization", "Basic dXNlcjpwYXNz"],
          ["X-Api-Key", "k-77"],
          ["Accept", "json"],
        ],
      }),
    ).toEqual({
      headers: [
        ["Authorization", REDACTED],
        ["X-Api-Key", REDACTED],
        ["Accept", "json"],
      ],
    });
    expect(
      redactSecrets([
        { name: "authorization", value: "opaque-1" },
        { key: "session", value: "s-1", secure: true },
        { name: "accept", value: "json" },
      ]),
    ).toEqual([
      { name: "authorization", value: REDACTED },
      { key: "session", value: REDACTED, secure: REDACTED },
      { name: "accept", value: "json" },
    ]);
  });

  it("redacts the exact API_TOKEN wherever it appears, once the host config has been read", () => {
    const apiToken = "exact-api-token-Zq7Lr2Vb9Xk4Mn8Pw3";
    expect(redactText(`it was ${apiToken}.`)).toBe(`it was ${apiToken}.`);
    parseConfig({ API_TOKEN: apiToken });
    expect(redactText(`it was ${apiToken}.`)).toBe("it was [redacted].");
    expect(JSON.stringify(redactSecrets({ note: `x${apiToken}y` }))).toBe('{"note":"x[redacted]y"}');
  });

  it("keeps the principal ids the engine writes in actor fields; a token-shaped value there is still redacted", () => {
    const out = redactSecrets({
      decided_by: "token:ci-bot",
      approved_by: "token:root",
      reconciled_by: "access:ada@example.com",
      requested_by: "access-service:ci.access",
      principal: "slack:T1:U1",
      note: "token:ci-bot",
      answered_by: "token: hunter2-but-spaced",
    });
    expect(out).toEqual({
      decided_by: "token:ci-bot",
      approved_by: "token:root",
      reconciled_by: "access:ada@example.com",
      requested_by: "access-service:ci.access",
      principal: "slack:T1:U1",
      note: "token:[redacted]",
      answered_by: "token: [redacted]",
    });
  });

  it("redacts values that are credentials on their own, under any key", () => {
    const out = redactSecrets({
      a: "Bearer abc.def-ghi",
      b: "Basic dXNlcjpwYXNzd29yZA==",
      c: "postgres://admin:hunter2@db.internal:5432/app",
      d: "https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/org/repo.git",
      e: "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
      f: ["sk-proj-abcdefghijklmnop1234", "sk_live_abcdefgh1234", "ghp_abcdefghijklmnopqrstuvwxyz0123"],
      g: ["gho_abcdefghijklmnopqrstuvwxyz0123", "xoxb-1234567890-abcdef", "xoxp-1234567890-abcdef"],
      h: ["AKIAABCDEFGHIJKLMNOP", "AIzaSyA1234567890abcdefghijklmnopqrstuv"],
      i: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl",
      // The engine's own named tokens (contract section 18).
      j: "the ci token is aee_Q2hhbmdlIG1lIGJ1dCBsb25nIGVub3VnaCB0byBsb29r here",
    });
    const text = JSON.stringify(out);
    expect(text).toContain(`"j":"the ci token is [redacted] here"`);
    for (const leaked of [
      "aee_",
      "abc.def",
      "dXNlcjpw",
      "hunter2",
      "ghp_",
      "MIIE",
      "sk-proj",
      "sk_live",
      "gho_",
      "xoxb",
      "xoxp",
      "AKIA",
      "AIza",
      "eyJ",
    ]) {
      expect(text).not.toContain(leaked);
    }
    expect(out).toMatchObject({ a: `Bearer ${REDACTED}`, c: `postgres://${REDACTED}@db.internal:5432/app` });
  });

  it("redacts JSON text inside a string value", () => {
    const out = redactSecrets({ body: JSON.stringify({ password: "pw-9", title: "t" }) }) as { body: string };
    expect(JSON.parse(out.body)).toEqual({ password: REDACTED, title: "t" });
  });

  it("replaces whatever lies deeper than its depth bound instead of walking it", () => {
    let deep: unknown = { password: "deep-secret" };
    for (let i = 0; i < 5000; i++) deep = [deep];
    const text = JSON.stringify(redactSecrets(deep));
    expect(text).not.toContain("deep-secret");
    expect(text).toContain(REDACTED);
    expect(MAX_REDACTION_DEPTH).toBeGreaterThanOrEqual(64);
  });
});

describe("redactText", () => {
  it("redacts header lines, query parameters and JSON pairs in free text", () => {
    const out = redactText(
      [
        "Authorization: Bearer tok-123",
        "authorization: Digest username=a, response=b",
        "Cookie: sid=abc; theme=dark",
        "GET /x?token=t-1&page=2&sig=s-1",
        'echo {"password":"pw-1","title":"ok"}',
        'escaped {\\"api_key\\":\\"k-2\\"}',
        "password=pw-3 user=bob",
        "api key=k-4 access key: k-5 private key=k-6",
        'json {"auth":"a-7","auth2":{"user":"u"}}',
      ].join("\n"),
    );
    for (const leaked of ["tok-123", "response=b", "sid=abc", "t-1", "s-1", "pw-1", "k-2", "pw-3", "k-4", "k-5", "k-6", "a-7"])
      expect(out).not.toContain(leaked);
    for (const kept of ["page=2", '"title":"ok"', "user=bob", '"user":"u"']) expect(out).toContain(kept);
  });

  it("parses a JSON text and redacts it as a structure, keeping unchanged text as it was", () => {
    const echoed = JSON.stringify({ headers: [{ name: "authorization", value: "opaque-9" }] }, null, 2);
    expect(redactText(echoed)).not.toContain("opaque-9");
    const harmless = JSON.stringify({ a: 1, b: ["x"] }, null, 2);
    expect(redactText(harmless)).toBe(harmless);
  });

  it("leaves prose alone", () => {
    const prose = "The basic idea: pass the compass to the passenger; tokens are counted.";
    expect(redactText(prose)).toBe(prose);
  });

  it("redacts a PEM private key even when cut off", () => {
    expect(redactText("key follows -----BEGIN PRIVATE KEY-----\nMIIBVQIBADAN")).toBe(`key follows ${REDACTED}`);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties

/** A credential's name as words, written in every key style a caller might use. */
const SECRET_NAMES: string[][] = [
  ["token"],
  ["access", "token"],
  ["secret"],
  ["client", "secret"],
  ["password"],
  ["passwd"],
  ["pwd"],
  ["pass"],
  ["api", "key"],
  ["access", "key"],
  ["private", "key"],
  ["authorization"],
  ["bearer"],
  ["cookie"],
  ["session"],
  ["session", "id"],
  ["signature"],
  ["sig"],
  ["credential"],
  ["credentials"],
];
/** Short stems that are only recognised as whole words: never written squashed into another word. */
const WORD_ONLY = new Set(["pass", "sig"]);

const cap = (w: string) => w[0]!.toUpperCase() + w.slice(1);
const styles: Array<(ws: string[]) => string> = [
  (ws) => ws.join("_"),
  (ws) => ws.join("-"),
  (ws) => ws.join(" "),
  (ws) => ws.join("."),
  (ws) => ws.map((w, i) => (i === 0 ? w : cap(w))).join(""),
  (ws) => ws.map(cap).join(""),
  (ws) => ws.join("_").toUpperCase(),
  (ws) => ws.map(cap).join("-"),
  (ws) => ws.join(""),
  (ws) => ws.join("").toUpperCase(),
];

const secretKeyArb = fc
  .record({
    name: fc.constantFrom(...SECRET_NAMES),
    prefix: fc.constantFrom([], ["db"], ["my", "app"], ["x"], ["github"]),
    suffix: fc.constantFrom([], ["value"], ["v2"], ["hash"]),
    style: fc.nat({ max: styles.length - 1 }),
  })
  .map(({ name, prefix, suffix, style }) => {
    const words = [...prefix, ...name, ...suffix];
    const squashed = style >= styles.length - 2;
    // A squashed short stem ("dbpass") is unreadable as a credential by design: write it separated.
    const s = squashed && name.some((w) => WORD_ONLY.has(w)) ? 0 : style;
    return styles[s]!(words);
  });

/** Unique text that shows up in the output only if the secret leaked. */
const markerArb = fc.stringMatching(/^[a-z0-9]{10}$/).map((s) => `CANARY${s}`);

/** Credentials recognisable by their value alone, around a marker. */
const credentialValueArb = fc.tuple(markerArb, fc.nat({ max: 8 })).map(([m, kind]) => {
  const hex = m.toLowerCase();
  switch (kind) {
    case 0:
      return { value: `Bearer ${m}`, marker: m };
    case 1:
      return { value: `Basic ${btoa(`user:${m}`)}`, marker: btoa(`user:${m}`).slice(0, 12) };
    case 2:
      return { value: `https://bob:${m}@example.com/path`, marker: m };
    case 3:
      return { value: `-----BEGIN EC PRIVATE KEY-----\n${m}\n-----END EC PRIVATE KEY-----`, marker: m };
    case 4:
      return { value: `sk-${m}abcdefgh`, marker: m };
    case 5:
      return { value: `ghp_${m}abcdefghij`, marker: m };
    case 6:
      return { value: `xoxb-${m}`, marker: m };
    case 7:
      return { value: `eyJhbGciOiJub25lIn0.eyJ${m}.`, marker: m };
    default:
      return { value: `Authorization: Bearer ${hex}`, marker: hex };
  }
});

const plainKeyArb = fc.constantFrom("title", "data", "items", "config", "value", "x", "Description", "meta");
const jsonLeaf = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.double({ noNaN: true }));
const treeArb = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small" },
    jsonLeaf,
    fc.array(tie("tree"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(plainKeyArb, fc.string({ maxLength: 8 })), tie("tree"), { maxKeys: 4 }),
  ),
})).tree;

/** Wraps `planted` in `depth` levels of plain objects and arrays. */
function bury(planted: unknown, path: Array<string | number>): unknown {
  let out = planted;
  for (const step of path.reverse()) out = typeof step === "number" ? [out] : { [step]: out };
  return out;
}
const pathArb = fc.array(fc.oneof(plainKeyArb, fc.constant(0)), { maxLength: 100 });

describe("redaction properties", () => {
  it("is idempotent on any JSON value and any text", () => {
    fc.assert(
      fc.property(fc.oneof(treeArb, fc.jsonValue()), (value) => {
        const once = redactSecrets(value);
        expect(redactSecrets(once)).toEqual(once);
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: "grapheme" }),
          credentialValueArb.map((c) => `say ${c.value} and password=x1 token: y2`),
          treeArb.map((t) => JSON.stringify(t) ?? ""),
        ),
        (text) => {
          const once = redactText(text);
          expect(redactText(once)).toBe(once);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("never lets a secret planted under a credential key survive, at any depth, in any key style", () => {
    fc.assert(
      fc.property(treeArb, secretKeyArb, markerArb, pathArb, fc.boolean(), (tree, key, marker, path, asArrayPair) => {
        const planted = asArrayPair ? [[key, marker]] : { [key]: marker, sibling: tree };
        const out = JSON.stringify(redactSecrets({ tree, deep: bury(planted, path) }));
        expect(out).not.toContain(marker);
      }),
      { numRuns: RUNS },
    );
  });

  it("never lets a credential-shaped value survive under any key, at any depth, or inside text", () => {
    fc.assert(
      fc.property(treeArb, credentialValueArb, plainKeyArb, pathArb, (tree, credential, key, path) => {
        const out = JSON.stringify(redactSecrets({ tree, deep: bury({ [key]: credential.value, also: `x ${credential.value} y` }, path) }));
        expect(out).not.toContain(credential.marker);
        expect(redactText(`result: ${credential.value}\n`)).not.toContain(credential.marker);
      }),
      { numRuns: RUNS },
    );
  });

  it("finds a planted pair in JSON text, as a result that echoes its arguments would carry", () => {
    fc.assert(
      fc.property(treeArb, secretKeyArb, markerArb, pathArb, fc.boolean(), (tree, key, marker, path, pretty) => {
        const echoed = JSON.stringify({ tree, deep: bury({ [key]: marker }, path.slice(0, 60)) }, null, pretty ? 2 : undefined);
        expect(redactText(echoed)).not.toContain(marker);
        expect(redactText(`echo: ${echoed}`)).not.toContain(marker);
      }),
      { numRuns: RUNS },
    );
  });
});
