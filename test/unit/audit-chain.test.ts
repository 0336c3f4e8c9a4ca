// The audit chain's pure parts (contract section 25): the hashed form and its
// SHA-256 over RFC 8785, the genesis prev_hash, details_hash, the checkpoint's
// RFC 7638 kid and Ed25519 signature over {"at","hash","kid","seq"}, and the
// offline verifier with its first bad seq and check. Every expected value is
// computed here from the contract's words with node:crypto and literal
// canonical strings (or a tiny sorted-keys serializer, RFC 8785 for the ASCII
// strings and integers used), never from src/. The key is RFC 8037's Ed25519
// example (its thumbprint is the RFC's own).
import { createHash, createPrivateKey, sign } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkpointSignatureValid,
  detailsHash,
  entryHash,
  GENESIS_PREV_HASH,
  hashedForm,
  jwkThumbprint,
  verifyAuditExport,
} from "../../src/client/audit-chain";
import { signHead } from "../../src/audit/audit-checkpoints";
import { parseConfig } from "../../src/config/config";

/** RFC 8037 appendix A.1/A.3: the Ed25519 example key and its RFC 7638 thumbprint. */
const RFC8037_KEY = {
  kty: "OKP" as const,
  crv: "Ed25519" as const,
  d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
  x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
};
const RFC8037_THUMBPRINT = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";
const PUBLIC = { kty: "OKP" as const, crv: "Ed25519" as const, x: RFC8037_KEY.x, kid: RFC8037_THUMBPRINT };

const sha = (text: string) => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;

/** Sorted keys, no whitespace: RFC 8785 for objects of ASCII strings and integers. */
function sortedJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sortedJson(record[k])}`)
    .join(",")}}`;
}

function nodeSign(text: string): string {
  const key = createPrivateKey({ key: { ...RFC8037_KEY }, format: "jwk" });
  return sign(null, Buffer.from(text, "utf8"), key).toString("base64url");
}

interface TestEntry {
  id: string;
  at: string;
  principal: string;
  action: string;
  target: string;
  result: "ok" | "refused";
  via: string;
  count?: number;
  details?: Record<string, unknown>;
  details_hash?: string;
  seq: number;
  prev_hash: string;
  hash: string;
}

/** A chain of `n` entries built by the contract's definition, with a checkpoint after every `every`-th (and the last). */
function chain(n: number, every = n): string[] {
  const lines: string[] = [];
  let prev = `sha256:${"0".repeat(64)}`;
  for (let seq = 1; seq <= n; seq++) {
    const details = seq % 2 === 0 ? { tool: `t${seq}`, n: seq } : undefined;
    const base = {
      id: `aud_${seq}`,
      at: `2026-12-01T00:00:${String(seq % 60).padStart(2, "0")}.000Z`,
      principal: `token:p${seq % 3}`,
      action: seq % 3 === 0 ? "access.refused" : "token.create",
      target: `token:t${seq}`,
      result: (seq % 3 === 0 ? "refused" : "ok") as "ok" | "refused",
      via: "api",
      ...(seq % 3 === 0 ? { count: seq } : {}),
      ...(details ? { details_hash: sha(sortedJson(details)) } : {}),
      seq,
      prev_hash: prev,
    };
    const hash = sha(sortedJson(base));
    const entry: TestEntry = { ...base, ...(details ? { details } : {}), hash };
    lines.push(JSON.stringify({ entry }));
    if (seq % every === 0 || seq === n) lines.push(JSON.stringify({ checkpoint: checkpoint(seq, hash) }));
    prev = hash;
  }
  return lines;
}

function checkpoint(seq: number, hash: string, at = "2026-12-02T00:00:00.000Z") {
  const signature = nodeSign(sortedJson({ at, hash, kid: RFC8037_THUMBPRINT, seq }));
  return { seq, hash, at, kid: RFC8037_THUMBPRINT, signature };
}

const entryOf = (line: string) => (JSON.parse(line) as { entry: TestEntry }).entry;

describe("the hashed form and hash (contract section 25)", () => {
  const entry = {
    id: "aud_01",
    at: "2026-12-01T10:00:00.000Z",
    principal: "token:ci",
    action: "access.refused",
    target: "GET /api/audit",
    result: "refused",
    count: 3,
    details: { error: "forbidden" },
    via: "api",
    client_ip: null,
    seq: 1,
    prev_hash: GENESIS_PREV_HASH,
  };

  it("the genesis prev_hash is sha256: and 64 zeros", () => {
    expect(GENESIS_PREV_HASH).toBe("sha256:0000000000000000000000000000000000000000000000000000000000000000");
  });

  it("details_hash is sha256: of the details' RFC 8785 form", async () => {
    expect(await detailsHash({ error: "forbidden", b: [1, 2], a: "é" })).toBe(sha('{"a":"é","b":[1,2],"error":"forbidden"}'));
  });

  it("hash is sha256: of the RFC 8785 form of id, at, principal, action, target, result, count?, details_hash?, via, client_ip?, seq, prev_hash — absent and null members omitted, details left out", async () => {
    const withHash = { ...entry, details_hash: sha('{"error":"forbidden"}') };
    expect(hashedForm(withHash)).not.toHaveProperty("details");
    expect(hashedForm(withHash)).not.toHaveProperty("client_ip");
    const literal =
      '{"action":"access.refused","at":"2026-12-01T10:00:00.000Z","count":3,' +
      `"details_hash":"${sha('{"error":"forbidden"}')}","id":"aud_01",` +
      `"prev_hash":"sha256:${"0".repeat(64)}","principal":"token:ci","result":"refused","seq":1,` +
      '"target":"GET /api/audit","via":"api"}';
    const expected = sha(literal);
    expect(expected).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await entryHash(withHash)).toBe(expected);
  });

  it("a lone surrogate cannot be hashed (not valid Unicode)", async () => {
    await expect(entryHash({ ...entry, principal: "token:\ud800" })).rejects.toThrow();
  });
});

describe("checkpoints (contract section 25)", () => {
  it("kid is the public key's RFC 7638 thumbprint (RFC 8037's example)", async () => {
    expect(await jwkThumbprint(RFC8037_KEY)).toBe(RFC8037_THUMBPRINT);
  });

  it("the signature is unpadded base64url Ed25519 over the RFC 8785 form of {at, hash, kid, seq}", async () => {
    const head = { seq: 42, hash: sha("head") };
    const made = await signHead(RFC8037_KEY, head, "2026-12-02T00:00:05.000Z");
    const literal = `{"at":"2026-12-02T00:00:05.000Z","hash":"${head.hash}","kid":"${RFC8037_THUMBPRINT}","seq":42}`;
    // Ed25519 is deterministic: node:crypto's signature of the literal is the same bytes.
    expect(made).toEqual({
      seq: 42,
      hash: head.hash,
      at: "2026-12-02T00:00:05.000Z",
      kid: RFC8037_THUMBPRINT,
      signature: nodeSign(literal),
    });
    expect(made.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(await checkpointSignatureValid(made, PUBLIC)).toBe(true);
    expect(await checkpointSignatureValid({ ...made, seq: 43 }, PUBLIC)).toBe(false);
  });
});

describe("AUDIT_SIGNING_KEY (contract section 25)", () => {
  const settings = (key: string) => ({ API_TOKEN: "t".repeat(40), AUDIT_SIGNING_KEY: key });
  it("an Ed25519 private JWK is taken; anything else is bad_config naming the setting, never echoing the value", () => {
    const good = parseConfig(settings(JSON.stringify(RFC8037_KEY)));
    expect(good.state).toBe("ready");
    expect(good.state === "ready" && good.config.AUDIT_SIGNING_KEY).toEqual(RFC8037_KEY);
    expect(parseConfig(settings("")).state).toBe("ready");
    for (const bad of [
      "not json",
      JSON.stringify({ ...RFC8037_KEY, crv: "Ed448" }),
      JSON.stringify({ ...RFC8037_KEY, kty: "EC" }),
      JSON.stringify({ kty: "OKP", crv: "Ed25519", x: RFC8037_KEY.x }),
      JSON.stringify({ ...RFC8037_KEY, d: "short" }),
    ]) {
      const result = parseConfig(settings(bad));
      expect(result.state, bad).toBe("bad_config");
      const details = result.state === "bad_config" ? result.details : [];
      expect(details.map((d) => d.path.split(".")[0])).toContain("AUDIT_SIGNING_KEY");
      expect(JSON.stringify(details)).not.toContain(RFC8037_KEY.d);
    }
  });
});

describe("the verifier", () => {
  const lines = chain(8, 4);

  it("a whole signed chain verifies; without the key the signatures are unchecked; an unsigned tail names its first seq", async () => {
    expect(await verifyAuditExport(lines, [PUBLIC])).toEqual({ ok: true, entries: 8, checkpoints: 2, first_seq: 1, last_seq: 8 });
    expect(await verifyAuditExport(lines)).toMatchObject({ ok: true, signatures_unchecked: true });
    const tail = chain(10, 4).filter((l) => !(l.startsWith('{"checkpoint"') && JSON.parse(l).checkpoint.seq === 10));
    expect(await verifyAuditExport(tail, [PUBLIC])).toMatchObject({ ok: true, unsigned_tail_from: 9 });
  });

  it("an export that starts from a checkpoint links to it; one from {anchor:none} starts unanchored", async () => {
    const fromFive = [lines[4]!, ...lines.slice(5)];
    expect(JSON.parse(fromFive[0]!)).toHaveProperty("checkpoint.seq", 4);
    expect(await verifyAuditExport(fromFive, [PUBLIC])).toMatchObject({ ok: true, entries: 4, first_seq: 5, last_seq: 8 });
    const unanchored = ['{"anchor":"none"}', ...lines.slice(2)];
    expect(await verifyAuditExport(unanchored, [PUBLIC])).toMatchObject({ ok: true, first_seq: 3, unanchored: true });
    // Without the anchor line an export must start at seq 1.
    expect(await verifyAuditExport(lines.slice(2), [PUBLIC])).toMatchObject({ ok: false, seq: 1, check: "gap" });
  });

  it("names the first bad seq and the check: an edit, scrubbed details, a removed, swapped or inserted line, a forged checkpoint", async () => {
    const at = (index: number, change: (e: TestEntry) => void) =>
      lines.map((l, i) => {
        if (i !== index) return l;
        const e = entryOf(l);
        change(e);
        return JSON.stringify({ entry: e });
      });
    // lines: e1 e2 e3 e4 cp4 e5 e6 e7 e8 cp8
    expect(
      await verifyAuditExport(
        at(2, (e) => (e.principal = "token:someone-else")),
        [PUBLIC],
      ),
    ).toMatchObject({ ok: false, seq: 3, check: "hash" });
    expect(
      await verifyAuditExport(
        at(6, (e) => (e.details = { tool: "t6", n: 7 })),
        [PUBLIC],
      ),
    ).toMatchObject({ ok: false, seq: 6, check: "hash" });
    expect(
      await verifyAuditExport(
        at(6, (e) => delete e.details),
        [PUBLIC],
      ),
    ).toMatchObject({ ok: true }); // a scrub keeps the chain
    expect(
      await verifyAuditExport(
        at(7, (e) => (e.prev_hash = sha("elsewhere"))),
        [PUBLIC],
      ),
    ).toMatchObject({ ok: false, seq: 7, check: "hash" });
    // A forger who recomputes the hash after changing prev_hash breaks the link instead.
    const relinked = at(7, (e) => {
      e.prev_hash = sha("elsewhere");
      const { hash: _hash, details: _details, ...rest } = e;
      e.hash = sha(sortedJson(rest));
    });
    expect(await verifyAuditExport(relinked, [PUBLIC])).toMatchObject({ ok: false, seq: 7, check: "link" });
    const removed = lines.filter((_, i) => i !== 6);
    expect(await verifyAuditExport(removed, [PUBLIC])).toMatchObject({ ok: false, seq: 6, check: "gap" });
    const swapped = [...lines];
    [swapped[6], swapped[7]] = [swapped[7]!, swapped[6]!];
    expect(await verifyAuditExport(swapped, [PUBLIC])).toMatchObject({ ok: false, seq: 6, check: "order" });
    const duplicated = [...lines.slice(0, 3), lines[1]!, ...lines.slice(3)];
    expect(await verifyAuditExport(duplicated, [PUBLIC])).toMatchObject({ ok: false, seq: 2, check: "order" });
    const forged = lines.map((l, i) =>
      i === 4 ? JSON.stringify({ checkpoint: { ...JSON.parse(l).checkpoint, at: "2027-01-01T00:00:00.000Z" } }) : l,
    );
    expect(await verifyAuditExport(forged, [PUBLIC])).toMatchObject({ ok: false, seq: 4, check: "signature" });
    // A member that is not in the export's format is an edit.
    const extra = lines.map((l, i) => (i === 0 ? l.replace('"via"', '"vio"') : l));
    expect(await verifyAuditExport(extra, [PUBLIC])).toMatchObject({ ok: false, seq: 1, check: "hash" });
  });

  it("property: any single edit, forged insert, removal or swap of entries is caught at the right seq", async () => {
    type Change =
      | { kind: "edit"; seq: number }
      | { kind: "insert"; after: number }
      | { kind: "remove"; seq: number }
      | { kind: "swap"; a: number; b: number };
    const changes = (n: number): fc.Arbitrary<Change> =>
      fc.oneof(
        fc.integer({ min: 1, max: n }).map((seq) => ({ kind: "edit", seq }) as Change),
        fc.integer({ min: 1, max: n - 1 }).map((after) => ({ kind: "insert", after }) as Change),
        fc.integer({ min: 1, max: n }).map((seq) => ({ kind: "remove", seq }) as Change),
        fc
          .tuple(fc.integer({ min: 1, max: n }), fc.integer({ min: 1, max: n }))
          .filter(([a, b]) => a !== b)
          .map(([a, b]) => ({ kind: "swap", a: Math.min(a, b), b: Math.max(a, b) }) as Change),
      );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 3, max: 16 }).chain((n) => fc.tuple(fc.constant(n), fc.integer({ min: 2, max: n }), changes(n))),
        async ([n, every, change]) => {
          const original = chain(n, every);
          const indexOf = (seq: number) => original.findIndex((l) => l.startsWith('{"entry"') && entryOf(l).seq === seq);
          const copy = [...original];
          let expected: number;
          switch (change.kind) {
            case "edit": {
              const e = entryOf(copy[indexOf(change.seq)]!);
              e.target += "x";
              copy[indexOf(change.seq)] = JSON.stringify({ entry: e });
              expected = change.seq;
              break;
            }
            case "insert": {
              // A well-formed entry claiming the next seq, hashed and linked correctly: the real one after it is then out of order.
              const prev = entryOf(copy[indexOf(change.after)]!);
              const base = {
                id: "aud_forged",
                at: prev.at,
                principal: "token:forger",
                action: "run.cancel",
                target: "run_x",
                result: "ok",
                via: "api",
                seq: change.after + 1,
                prev_hash: prev.hash,
              };
              const forged = JSON.stringify({ entry: { ...base, hash: sha(sortedJson(base)) } });
              copy.splice(indexOf(change.after + 1), 0, forged);
              expected = change.after + 1;
              break;
            }
            case "remove":
              copy.splice(indexOf(change.seq), 1);
              expected = change.seq;
              break;
            case "swap": {
              const [i, j] = [indexOf(change.a), indexOf(change.b)];
              [copy[i], copy[j]] = [copy[j]!, copy[i]!];
              expected = change.a;
              break;
            }
          }
          const report = await verifyAuditExport(copy, [PUBLIC]);
          expect(report.ok, JSON.stringify(change)).toBe(false);
          expect((report as { seq: number }).seq, JSON.stringify({ change, report })).toBe(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
