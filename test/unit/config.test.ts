import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";

describe("parseConfig", () => {
  it("applies the contract's defaults (section 13), written here as the contract's literal numbers", () => {
    const result = parseConfig({ API_TOKEN: "t".repeat(32) });
    expect(result.state).toBe("ready");
    if (result.state !== "ready") return;
    expect(result.config).toMatchObject({
      MODEL_PROVIDER: "scripted",
      MCP_SERVERS: {},
      TOOL_POLICY: {},
      MUTATION_BUDGET: {},
      MAX_TOOL_CALLS: 25,
      APPROVAL_TIMEOUT_MS: 300000,
      ADMISSION_TIMEOUT_MS: 300000,
      HEARTBEAT_INTERVAL_MS: 15000,
      STREAM_MAX_SECONDS: 3600,
      STORAGE_WAIT_MS: 5000,
      STORAGE_LEASE_MS: 120000,
      MCP_CONNECT_TIMEOUT_MS: 30000,
      MCP_CALL_TIMEOUT_MS: 60000,
      MCP_MAX_RESPONSE_BYTES: 1048576,
      MCP_MAX_INPUT_ROUNDS: 3,
      MCP_TOOL_LIST_MAX_AGE_MS: 60000,
      RUN_RETENTION_SECONDS: 86400,
      RUN_MAX_EVENTS: 10000,
    });
  });

  it("reads numbers and JSON from strings, as wrangler vars arrive", () => {
    const result = parseConfig({
      API_TOKEN: "t".repeat(32),
      HEARTBEAT_INTERVAL_MS: "250",
      MCP_SERVERS: '{"demo":{"url":"http://127.0.0.1:3001/mcp"}}',
      MUTATION_BUDGET: { mcp__demo__create_dashboard: 2 },
    });
    expect(result.state === "ready" && result.config.HEARTBEAT_INTERVAL_MS).toBe(250);
    expect(result.state === "ready" && result.config.MCP_SERVERS.demo?.url).toBe("http://127.0.0.1:3001/mcp");
    expect(result.state === "ready" && result.config.MUTATION_BUDGET).toEqual({ mcp__demo__create_dashboard: 2 });
  });

  it("reads MCP_TOOL_LIST_MAX_AGE_MS, 0 allowed (every call lists), and refuses a bad one as bad_config naming it (contract section 23)", () => {
    const base = { API_TOKEN: "t".repeat(32) };
    const zero = parseConfig({ ...base, MCP_TOOL_LIST_MAX_AGE_MS: "0" });
    expect(zero.state === "ready" && zero.config.MCP_TOOL_LIST_MAX_AGE_MS).toBe(0);
    for (const bad of ["-1", "1.5", "soon"]) {
      const result = parseConfig({ ...base, MCP_TOOL_LIST_MAX_AGE_MS: bad });
      expect(result.state === "bad_config" && result.details.map((d) => d.path)).toEqual(["MCP_TOOL_LIST_MAX_AGE_MS"]);
    }
  });

  it("refuses an API_TOKEN shorter than 32 characters as bad_config, naming the setting", () => {
    const result = parseConfig({ API_TOKEN: "t".repeat(31) });
    expect(result.state).toBe("bad_config");
    if (result.state !== "bad_config") return;
    expect(result.details).toEqual([expect.objectContaining({ path: "API_TOKEN", message: expect.stringContaining("at least 32") })]);
    expect(parseConfig({ API_TOKEN: "t".repeat(32) }).state).toBe("ready");
  });

  it("reads MCP_SERVERS[server].trust_annotations, false unless the host says true (contract section 21)", () => {
    const result = parseConfig({
      API_TOKEN: "t".repeat(32),
      MCP_SERVERS: '{"demo":{"url":"http://127.0.0.1:3001/mcp","trust_annotations":true},"ops":{"url":"https://ops.example/mcp"}}',
    });
    expect(result.state === "ready" && result.config.MCP_SERVERS.demo?.trust_annotations).toBe(true);
    expect(result.state === "ready" && result.config.MCP_SERVERS.ops?.trust_annotations).toBe(false);
    const bad = parseConfig({
      API_TOKEN: "t".repeat(32),
      MCP_SERVERS: '{"demo":{"url":"http://127.0.0.1:3001/mcp","trust_annotations":"yes"}}',
    });
    expect(bad.state === "bad_config" && bad.details.map((d) => d.path)).toEqual(["MCP_SERVERS.demo.trust_annotations"]);
  });

  it("is not_configured without an API token, so the API fails closed", () => {
    expect(parseConfig({}).state).toBe("not_configured");
    expect(parseConfig({ API_TOKEN: "" }).state).toBe("not_configured");
  });

  it("names every bad value", () => {
    const result = parseConfig({
      API_TOKEN: "t".repeat(32),
      MODEL_PROVIDER: "gpt",
      HEARTBEAT_INTERVAL_MS: "0",
      TOOL_POLICY: '{"x":{"level":"maybe"}}',
      MCP_SERVERS: "[",
    });
    expect(result.state).toBe("bad_config");
    if (result.state !== "bad_config") return;
    expect(result.details.map((d) => d.path.split(".")[0]).sort()).toEqual([
      "HEARTBEAT_INTERVAL_MS",
      "MCP_SERVERS",
      "MODEL_PROVIDER",
      "TOOL_POLICY",
    ]);
  });
});

describe("Slack settings (contract section 13)", () => {
  it("defaults: off until both secrets are set, slack.com, no approvers, no external channels or users, team from auth.test, 10 minutes", () => {
    const result = parseConfig({ API_TOKEN: "t".repeat(32) });
    expect(result.state === "ready" && [result.config.SLACK_SIGNING_SECRET, result.config.SLACK_BOT_TOKEN]).toEqual([undefined, undefined]);
    expect(result.state === "ready" && result.config).toMatchObject({
      SLACK_API_BASE_URL: "https://slack.com/api/",
      SLACK_APPROVERS: [],
      SLACK_ALLOW_EXTERNAL_CHANNELS: false,
      SLACK_ALLOW_EXTERNAL_USERS: false,
      SLACK_DELIVERY_MAX_MS: 600_000,
    });
    expect(result.state === "ready" && result.config.SLACK_TEAM_ID).toBeUndefined();
  });

  it("reads wrangler strings and fails closed on bad values", () => {
    const ok = parseConfig({
      API_TOKEN: "t".repeat(32),
      SLACK_APPROVERS: '["U0AAA","W0BBB","T0OTHER:U0CCC","E0GRID:W0DDD"]',
      SLACK_ALLOW_EXTERNAL_CHANNELS: "true",
      SLACK_ALLOW_EXTERNAL_USERS: "true",
      SLACK_TEAM_ID: "T0HOME",
      SLACK_DELIVERY_MAX_MS: "5000",
    });
    expect(
      ok.state === "ready" && [
        ok.config.SLACK_APPROVERS,
        ok.config.SLACK_ALLOW_EXTERNAL_CHANNELS,
        ok.config.SLACK_ALLOW_EXTERNAL_USERS,
        ok.config.SLACK_TEAM_ID,
        ok.config.SLACK_DELIVERY_MAX_MS,
      ],
    ).toEqual([["U0AAA", "W0BBB", "T0OTHER:U0CCC", "E0GRID:W0DDD"], true, true, "T0HOME", 5000]);
    const bad = parseConfig({
      API_TOKEN: "t".repeat(32),
      SLACK_APPROVERS: '["U0AAA","alice","slack:T1:U1","T1:alice"]',
      SLACK_ALLOW_EXTERNAL_CHANNELS: "nope",
      SLACK_ALLOW_EXTERNAL_USERS: "yes please",
      SLACK_TEAM_ID: "workspace-1",
      SLACK_API_BASE_URL: "not a url",
    });
    expect(bad.state).toBe("bad_config");
    expect(bad.state === "bad_config" && bad.details.map((d) => d.path).sort()).toEqual([
      "SLACK_ALLOW_EXTERNAL_CHANNELS",
      "SLACK_ALLOW_EXTERNAL_USERS",
      "SLACK_API_BASE_URL",
      "SLACK_APPROVERS.1",
      "SLACK_APPROVERS.2",
      "SLACK_APPROVERS.3",
      "SLACK_TEAM_ID",
    ]);
  });
});

describe("retention settings (contract section 22)", () => {
  it("defaults: receipts 30 days, index 90, audit 400, mutation rows kept (unset)", () => {
    const result = parseConfig({ API_TOKEN: "t".repeat(32) });
    if (result.state !== "ready") throw new Error(result.state);
    expect(result.config.RECEIPT_RETENTION_DAYS).toBe(30);
    expect(result.config.INDEX_RETENTION_DAYS).toBe(90);
    expect(result.config.AUDIT_RETENTION_DAYS).toBe(400);
    expect(result.config.MUTATION_RETENTION_DAYS).toBeUndefined();
  });

  it("takes decimal days and refuses zero, negative and non-numbers, naming the setting", () => {
    const ok = parseConfig({ API_TOKEN: "t".repeat(32), RECEIPT_RETENTION_DAYS: "0.5", MUTATION_RETENTION_DAYS: "730" });
    if (ok.state !== "ready") throw new Error(ok.state);
    expect(ok.config.RECEIPT_RETENTION_DAYS).toBe(0.5);
    expect(ok.config.MUTATION_RETENTION_DAYS).toBe(730);
    for (const bad of ["0", "-1", "soon"]) {
      const result = parseConfig({ API_TOKEN: "t".repeat(32), INDEX_RETENTION_DAYS: bad });
      expect(result.state).toBe("bad_config");
      if (result.state === "bad_config") expect(result.details.map((d) => d.path)).toEqual(["INDEX_RETENTION_DAYS"]);
    }
  });
});

describe("approval policy settings (contract section 19)", () => {
  const token = "t".repeat(32);

  it('reads approvers, approvals_required, self_approval, the "*" defaults and APPROVER_GROUPS', () => {
    const result = parseConfig({
      API_TOKEN: token,
      TOOL_POLICY: JSON.stringify({
        "*": { approvers: ["group:sre"], approvals_required: 2 },
        mcp__a__b: { level: "confirm", self_approval: false, approvers: ["access:*@acme.com", "token:sre-*"] },
      }),
      APPROVER_GROUPS: '{"sre":["slack:T1:U1","access:lead@acme.com"]}',
    });
    expect(result.state).toBe("ready");
    expect(result.state === "ready" && [result.config.TOOL_POLICY, result.config.APPROVER_GROUPS]).toEqual([
      {
        "*": { approvers: ["group:sre"], approvals_required: 2 },
        mcp__a__b: { level: "confirm", self_approval: false, approvers: ["access:*@acme.com", "token:sre-*"] },
      },
      { sre: ["slack:T1:U1", "access:lead@acme.com"] },
    ]);
  });

  it('fails closed: "*" with other fields, quorums outside 1..5, bad patterns, nested or unknown groups', () => {
    const paths = (env: Record<string, unknown>) => {
      const result = parseConfig({ API_TOKEN: token, ...env });
      return result.state === "bad_config" ? result.details.map((d) => d.path).sort() : result.state;
    };
    expect(paths({ TOOL_POLICY: '{"*":{"level":"confirm","read_only":true}}' })).toEqual([
      "TOOL_POLICY.*.level",
      "TOOL_POLICY.*.read_only",
    ]);
    expect(paths({ TOOL_POLICY: '{"*":{"approvals_required":6},"x":{"approvals_required":0}}' })).toEqual([
      "TOOL_POLICY.*.approvals_required",
      "TOOL_POLICY.x.approvals_required",
    ]);
    expect(paths({ TOOL_POLICY: '{"x":{"approvers":["alice@acme.com"]},"y":{"approvers":[]},"z":{"self_approval":"no"}}' })).toEqual([
      "TOOL_POLICY.x.approvers.0",
      "TOOL_POLICY.y.approvers",
      "TOOL_POLICY.z.self_approval",
    ]);
    expect(paths({ APPROVER_GROUPS: '{"a":["group:b"],"b":[]}' })).toEqual(["APPROVER_GROUPS.a.0", "APPROVER_GROUPS.b"]);
    expect(paths({ TOOL_POLICY: '{"x":{"approvers":["token:a","group:nobody"]}}', APPROVER_GROUPS: '{"ops":["token:b"]}' })).toEqual([
      "TOOL_POLICY.x.approvers.1",
    ]);
    expect(paths({ TOOL_POLICY: '{"x":{"approvers":["group:ops"]}}', APPROVER_GROUPS: '{"ops":["token:b"]}' })).toBe("ready");
  });
});

describe("MCP OAuth settings (contract section 21)", () => {
  const KEY = btoa("k".repeat(32));
  const oauthServers = '{"hosted":{"url":"https://mcp.example/mcp","oauth":{"client_id":"engine","scopes":["read","write"]}}}';

  it("reads oauth with MCP_TOKEN_KEY and PUBLIC_URL", () => {
    const result = parseConfig({
      API_TOKEN: "t".repeat(32),
      MCP_SERVERS: oauthServers,
      MCP_TOKEN_KEY: KEY,
      PUBLIC_URL: "https://engine.example/",
    });
    expect(result.state).toBe("ready");
    expect(result.state === "ready" && result.config.MCP_SERVERS.hosted?.oauth).toEqual({ client_id: "engine", scopes: ["read", "write"] });
  });

  it("fails closed without MCP_TOKEN_KEY or PUBLIC_URL, with a key that is not 32 bytes, or an unknown oauth field", () => {
    const base = { API_TOKEN: "t".repeat(32), MCP_SERVERS: oauthServers };
    const missing = parseConfig(base);
    expect(missing.state).toBe("bad_config");
    expect(missing.state === "bad_config" && missing.details.map((d) => d.path).sort()).toEqual(["MCP_TOKEN_KEY", "PUBLIC_URL"]);
    const shortKey = parseConfig({ ...base, MCP_TOKEN_KEY: btoa("short"), PUBLIC_URL: "https://engine.example" });
    expect(shortKey.state === "bad_config" && shortKey.details.map((d) => d.path)).toEqual(["MCP_TOKEN_KEY"]);
    const unknown = parseConfig({
      ...base,
      MCP_SERVERS: '{"hosted":{"url":"https://mcp.example/mcp","oauth":{"client_secret":"x"}}}',
      MCP_TOKEN_KEY: KEY,
      PUBLIC_URL: "https://engine.example",
    });
    expect(unknown.state).toBe("bad_config");
    // Without any oauth server neither setting is needed.
    expect(parseConfig({ API_TOKEN: "t".repeat(32) }).state).toBe("ready");
  });
});

describe("WEBHOOKS (contract section 26)", () => {
  const base = { API_TOKEN: "t".repeat(32) };
  const bytes = (n: number) => btoa(String.fromCharCode(...Array.from({ length: n }, (_, i) => (i * 37 + 11) % 256)));
  const good = `whsec_${bytes(32)}`;
  const entry = (fields: Record<string, unknown> = {}) => ({
    url: "https://hooks.example.com/in",
    events: ["run.failed"],
    secret: good,
    ...fields,
  });
  const parse = (entries: unknown[]) => parseConfig({ ...base, WEBHOOKS: JSON.stringify(entries) });

  it("defaults: no endpoints, a day of retries", () => {
    const result = parseConfig(base);
    expect(result.state === "ready" && [result.config.WEBHOOKS, result.config.WEBHOOK_DELIVERY_MAX_MS]).toEqual([[], 86400000]);
  });

  it("reads https, or http to loopback with a port, and `secret` or `secrets` (newest first) as the list", () => {
    const result = parse([
      entry(),
      entry({ url: "http://127.0.0.1:9000/hook", secret: undefined, secrets: [good, `whsec_${bytes(24)}`] }),
      entry({ url: "http://localhost:9001/", events: ["halt.engaged", "halt.released"] }),
      entry({ url: "http://[::1]:9002/x", secret: `whsec_${bytes(64)}` }),
    ]);
    expect(result.state).toBe("ready");
    if (result.state !== "ready") return;
    expect(result.config.WEBHOOKS.map((e) => e.secrets.length)).toEqual([1, 2, 1, 1]);
  });

  it("fails closed naming the entry's index, never the secret: not https, a short or non-whsec_ or non-base64 secret, an unknown type", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: "http://hooks.example.com/in" }, "WEBHOOKS.1.url"],
      [{ url: "http://127.0.0.1/no-port" }, "WEBHOOKS.1.url"],
      [{ url: "ftp://127.0.0.1:21/" }, "WEBHOOKS.1.url"],
      [{ secret: `whsec_${bytes(23)}` }, "WEBHOOKS.1.secret"],
      [{ secret: `whsec_${bytes(65)}` }, "WEBHOOKS.1.secret"],
      [{ secret: bytes(32) }, "WEBHOOKS.1.secret"],
      [{ secret: "whsec_not*base64*at*all*but*long*enough*to*pass" }, "WEBHOOKS.1.secret"],
      [{ events: ["run.completed"] }, "WEBHOOKS.1.events.0"],
      [{ events: [] }, "WEBHOOKS.1.events"],
      [{ secret: undefined }, "WEBHOOKS.1.secret"],
      [{ secrets: [good] }, "WEBHOOKS.1.secret"],
      [{ extra: true }, "WEBHOOKS.1"],
    ];
    for (const [fields, path] of cases) {
      const result = parse([entry(), entry(fields)]);
      expect(result.state, JSON.stringify(fields)).toBe("bad_config");
      if (result.state !== "bad_config") continue;
      expect(result.details.map((d) => d.path)).toContain(path);
      const text = JSON.stringify(result);
      expect(text).not.toContain(good.slice(6));
      if (typeof fields.secret === "string") expect(text).not.toContain(fields.secret);
    }
    const notJson = parseConfig({ ...base, WEBHOOKS: "[{" });
    expect(notJson.state === "bad_config" && notJson.details.map((d) => d.path)).toEqual(["WEBHOOKS"]);
  });
});
