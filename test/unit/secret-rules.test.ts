// The value rules (contract section 20): every rule secret-rules.ts runs
// (secretlint's recommended preset, gitleaks' defaults it lacks, the
// engine's own) finds its own sample of test/fixtures/secret-samples.ts, the
// fixture has a sample for every rule, and redaction takes each sample out
// of free text and of structures, whatever the key; the name-only shapes
// (header pairs, argv, privkey...) come out too.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";
import { REDACTED, redactSecrets, redactText } from "../../src/execution/redaction";
import { findSecretSpans, SECRETLINT_RULE_IDS, VALUE_RULES } from "../../src/execution/secret-rules";
import { NAMED_SAMPLES, NAMED_TEXT_SAMPLES, piecesOf, SECRET_SAMPLES } from "../fixtures/secret-samples";

const ruleIds = [...SECRETLINT_RULE_IDS, ...VALUE_RULES.map((r) => r.id)];

describe("the value rules", () => {
  it("run secretlint's whole recommended preset but filter-comments and gcp", () => {
    expect(SECRETLINT_RULE_IDS.length).toBeGreaterThanOrEqual(20);
    expect(SECRETLINT_RULE_IDS).toContain("@secretlint/secretlint-rule-github");
    expect(SECRETLINT_RULE_IDS).not.toContain("@secretlint/secretlint-rule-filter-comments");
  });

  it("have one sample each in the fixture, and the fixture names no other rule", () => {
    expect(new Set(SECRET_SAMPLES.map((s) => s.rule))).toEqual(new Set(ruleIds));
  });

  it.each(SECRET_SAMPLES.map((s) => [s.rule, s] as const))("%s finds its own sample", (rule, sample) => {
    const text = `before ${sample.value} after`;
    const secret = sample.secret ?? sample.value;
    const spans = findSecretSpans(text).filter((s) => s.rule === rule);
    expect(spans.length, `${rule} did not match its sample`).toBeGreaterThan(0);
    // Allowing for a rule that leaves out a few characters of framing (a closing quote, a URL's path).
    const at = text.indexOf(secret);
    expect(spans.some((s) => s.start <= at + 4 && s.end >= at + secret.length - 4)).toBe(true);
  });

  it.each(SECRET_SAMPLES.map((s) => [s.rule, s] as const))("%s: redacted in text, JSON text and under any key", (_rule, sample) => {
    const { value } = sample;
    const secret = sample.secret ?? value;
    for (const out of [
      redactText(`the value is ${value} ok`),
      redactText(JSON.stringify({ note: `x ${value}` })),
      JSON.stringify(redactSecrets({ title: value, list: [`see ${value}`], nested: { v: [[value]] } })),
    ]) {
      expect(out).toContain(REDACTED);
      for (const piece of piecesOf(secret)) expect(out).not.toContain(piece);
    }
  });
});

describe("gitleaks' prefix rules an outside check found passing unredacted (issue 29)", () => {
  const cat = (...parts: string[]) => parts.join("");
  const hex = (n: number) => "0a1b2c3d4e5f6789".repeat(8).slice(0, n);
  const alnum = (n: number) => "Qm7pX2vR9kT4wZ8nB3cL6hJ1".repeat(8).slice(0, n);
  // Written by hand from gitleaks' rule descriptions, not generated: each under a key that names nothing secret.
  const found: [string, string][] = [
    ["PyPI upload token", cat("py", "pi-AgEIcHlwaS5vcmc", alnum(60))],
    ["DigitalOcean PAT", cat("do", "p_v1_", hex(64))],
    ["Twilio API key", cat("S", "K", hex(32))],
    ["age secret key", cat("AGE-SECRET", "-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".repeat(2).slice(0, 58))],
    ["Postman API token", cat("PM", "AK-", hex(24), "-", hex(34))],
    ["Pulumi API token", cat("pu", "l-", hex(40))],
    ["RubyGems API token", cat("ruby", "gems_", hex(48))],
    ["Sentry user token", cat("sntr", "yu_", hex(64))],
    ["Doppler API token", cat("dp", ".pt.", alnum(43))],
    ["Prefect API token", cat("pn", "u_", alnum(36))],
    ["Azure AD client secret", cat("abc8", "Q~", alnum(34))],
  ];

  it.each(found)("%s is redacted under an innocent key, in a list and inside text", (_name, value) => {
    const out = JSON.stringify(redactSecrets({ note: value, list: [value], description: `deployed with ${value} today` }));
    for (const piece of piecesOf(value)) expect(out).not.toContain(piece);
    expect(out).toContain("deployed with");
    expect(redactText(`x ${value}`)).toBe(`x ${REDACTED}`);
  });

  it("the generated rules are gitleaks' prefix rules, and its context rules are left to the key-name rules", () => {
    const ids = VALUE_RULES.map((r) => r.id);
    for (const id of [
      "pypi-upload-token",
      "digitalocean-pat",
      "twilio-api-key",
      "age-secret-key",
      "azure-ad-client-secret",
      "atlassian-api-token",
    ]) {
      expect(ids).toContain(`gitleaks:${id}`);
    }
    expect(ids).not.toContain("gitleaks:generic-api-key");
    expect(ids.filter((id) => id.startsWith("gitleaks:")).length).toBeGreaterThanOrEqual(100);
  });

  it("a git commit id is not taken for a secret", () => {
    const sha = "9fceb02d0ae598e95dc970b74767f19372d61af8";
    expect(redactText(`merged ${sha}`)).toBe(`merged ${sha}`);
  });
});

describe("credentials by name", () => {
  it.each(NAMED_SAMPLES.map((s) => [s.shape, s] as const))("%s: redacted as a structure and as JSON text", (_shape, sample) => {
    expect(JSON.stringify(redactSecrets({ args: sample.value }))).not.toContain(sample.secret);
    expect(redactText(JSON.stringify(sample.value))).not.toContain(sample.secret);
  });

  it.each(NAMED_TEXT_SAMPLES.map((s) => [s.shape, s] as const))("%s: redacted in free text", (_shape, sample) => {
    const out = redactText(sample.text);
    expect(out).not.toContain(sample.secret);
    expect(out).toContain(REDACTED);
  });

  it("keeps what names nothing secret", () => {
    expect(redactSecrets([["Content-Type", "application/json"]])).toEqual([["Content-Type", "application/json"]]);
    expect(redactSecrets(["ls", "--all", "/tmp"])).toEqual(["ls", "--all", "/tmp"]);
    expect(redactText("ran: ls --color always")).toBe("ran: ls --color always");
  });
});

describe("the deployment's own secrets, by exact value", () => {
  it("the configured API_TOKEN and Slack secrets are redacted whatever their shape", () => {
    const token = "plain words make a long root token 7";
    const signing = "another plain secret 9";
    expect(redactText(`said ${token} and ${signing}`)).toBe(`said ${token} and ${signing}`);
    expect(parseConfig({ API_TOKEN: token, SLACK_SIGNING_SECRET: signing }).state).toBe("ready");
    expect(redactText(`said ${token} and ${signing}`)).toBe(`said ${REDACTED} and ${REDACTED}`);
    expect(JSON.stringify(redactSecrets({ note: `x${token}x` }))).not.toContain(token);
  });
});

describe("a name field that itself holds a secret", () => {
  it("is kept as a name but its text is redacted (fast-check's counterexample: a session cookie under `key`)", () => {
    // Built from parts: no whole sample stands in the file.
    const cookie = ["_gitlab", "_session=", "a3d5g7j9m1p2s4v6", "y8c0ixotwbehnqzk"].join("");
    expect(JSON.stringify(redactSecrets({ key: cookie }))).not.toContain("ixotwbehnqzk");
    expect(redactText(JSON.stringify({ key: cookie }))).not.toContain("ixotwbehnqzk");
    expect(redactSecrets({ name: "authorization", value: "x" })).toEqual({ name: "authorization", value: REDACTED });
  });
});

describe("a planted value never comes out (property)", () => {
  const planted = fc.constantFrom(...SECRET_SAMPLES.map((s) => s.value));
  /** A JSON-like value with the planted secret at some place: a value, an array item, inside text. */
  const carrier = (secret: string) =>
    fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constant(secret),
        fc.string({ maxLength: 8 }).map((s) => `${s} ${secret} ${s}`),
        fc.array(tie("node"), { minLength: 1, maxLength: 3 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tie("node"), { minKeys: 1, maxKeys: 3 }),
      ),
    })).node;

  it("in any field of a structure, or of its JSON text", () => {
    fc.assert(
      fc.property(
        planted.chain((secret) => fc.tuple(fc.constant(secret), carrier(secret))),
        ([secret, value]) => {
          const sample = SECRET_SAMPLES.find((s) => s.value === secret)!;
          const core = (sample.secret ?? secret).slice(-12);
          expect(JSON.stringify(redactSecrets(value))).not.toContain(core);
          expect(redactText(JSON.stringify(value))).not.toContain(core);
        },
      ),
      { numRuns: 500 },
    );
  });
});
