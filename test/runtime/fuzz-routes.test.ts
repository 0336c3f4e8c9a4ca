// Fuzzing the Worker's routes (contract section 17: no input gets a 500).
// fast-check generates trigger, decision, answer, reconcile and events-route
// requests (deep nesting, huge and odd numbers, odd unicode, lone surrogates,
// NUL, oversize fields, wrong types, odd ids in every path position) and sends
// them through SELF.fetch. Every answer must be below 500 (503 only as the
// storage guard's documented busy answer) and every error JSON.
// /slack/* (contract section 20) gets signed garbage: the Slack app is on for
// those cases (its secrets are given to the route's handler), so every body
// passes the signature check and reaches the parsing. Console cookies get odd
// MACs and ids on /api/* and /console*: 401, never 500.
// At least 2,000 cases in CI; FUZZ_RUNS (npm run fuzz) multiplies them.
import { createExecutionContext, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/config/env";
import { handleSlackRequest } from "../../src/slack/slack-app";
import { api, freshAddress, trigger } from "./helpers";

/** Cases in CI per route family: 800 + 4 × 300 = 2,000. */
const SCALE = Math.max(1, Number(env.FUZZ_RUNS || 0) / 2000);
const runs = (ci: number) => Math.round(ci * SCALE);

function loneSurrogate(): fc.Arbitrary<string> {
  return fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
}

const oddChar = fc.oneof(
  fc.constantFrom("\u0000", "\u202e", "\ufeff", "\u{1F600}", "\n", "\r", "%", "/", "..", "\\", '"', "'", "<", "\u0085", "\u2028", "é"),
  loneSurrogate(),
);
const oddString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: oddChar, maxLength: 12 }),
  fc.constantFrom("", " ", "x".repeat(201), "x".repeat(33_000), "null", "[]", "{}", "run_", "__proto__", "constructor"),
);
const oddNumberText = fc.constantFrom(
  "1e999",
  "-1e999",
  "-0",
  "123456789012345678901234567890",
  "1e-400",
  "0.1",
  "9007199254740993",
  "-1",
  "1e308",
);
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }),
);

/** Nested arrays/objects `levels` deep around a value, as raw JSON text. */
const deepText = fc
  .tuple(fc.integer({ min: 1, max: 5000 }), fc.boolean())
  .map(([levels, objects]) =>
    objects ? `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}` : `${"[".repeat(levels)}1${"]".repeat(levels)}`,
  );

/** Any JSON text, mostly odd: values, deep nesting, broken syntax, huge numbers. */
const anyBodyText = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  oddValue.map((v) => JSON.stringify(v) ?? "null"),
  deepText,
  fc.constantFrom("", "{", "{]", '{"message":', "\u0000", "null", "true", '"\\ud800"', "[1,]", "x".repeat(70_000)),
  oddNumberText,
);

/** An object body with the route's field names, each given an odd value, plus maybe an unknown key. */
function fieldsBody(fields: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.subarray(fields),
      fc.array(
        fc.oneof(
          oddValue,
          deepText.map((t) => ({ raw: t })),
          oddNumberText.map((t) => ({ raw: t })),
        ),
        {
          minLength: fields.length,
          maxLength: fields.length,
        },
      ),
      fc.option(fc.string({ maxLength: 8 })),
    )
    .map(([chosen, values, extra]) => {
      const parts = chosen.map((field, i) => {
        const v = values[i];
        const text = typeof v === "object" && v !== null && "raw" in v ? (v as { raw: string }).raw : JSON.stringify(v);
        return `${JSON.stringify(field)}:${text}`;
      });
      if (extra !== null) parts.push(`${JSON.stringify(extra)}:1`);
      return `{${parts.join(",")}}`;
    });
}

const toolName = fc.oneof(fc.constantFrom("human__ask", "mcp__nosuch__tool", "mcp__x", "rm -rf", "", "human__ask2"), oddString);
const toolCall = fc.record(
  {
    tool_name: toolName,
    tool_call_id: fc.oneof(fc.constantFrom("t1", "t2"), oddString),
    arguments: fc.oneof(fc.jsonValue({ maxDepth: 4 }), oddValue, fc.dictionary(oddString, oddValue, { maxKeys: 4 })),
  },
  { requiredKeys: [] },
);
const scriptTurn = fc.record(
  {
    text: oddString,
    tool_calls: fc.array(toolCall, { maxLength: 3 }),
    delay_ms: fc.oneof(fc.constantFrom(0, -1, 1.5, 600_001), fc.integer()),
  },
  { requiredKeys: [] },
);
/** A trigger close to valid: right keys, odd values. A run that starts ends at once or waits for a person. */
const nearValidTrigger = fc
  .record(
    {
      message: fc.oneof(oddString, fc.constant("hi"), oddValue),
      channel_id: oddString,
      user_id: oddString,
      delivery_id: oddString,
      max_tool_calls: fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, 1e308, -0)),
      script: fc.oneof(fc.array(scriptTurn, { maxLength: 3 }), fc.constant([{ text: "done" }]), oddValue),
    },
    { requiredKeys: ["message"] },
  )
  .map((body) => JSON.stringify(body));

const contentType = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "application/vnd.api+json",
  "text/plain",
  "",
  "application/x-www-form-urlencoded",
);

function safeEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return "%ED%A0%80"; // a lone surrogate, UTF-8 encoded as an unpaired half
  }
}
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const validRunId = fc.array(fc.constantFrom(...crockford), { minLength: 26, maxLength: 26 }).map((cs) => `run_${cs.join("")}`);
let liveRunId = "";
/** An id in a path position: well-formed, existing, odd, encoded or raw-but-URL-safe. */
const pathId = fc.oneof(
  validRunId,
  fc.constant("live"),
  oddString.map(safeEncode),
  fc.constantFrom("%", "%E0%A4%A", "..", ".", "%2F", "a%00b", "x".repeat(2000), "%F0%9F%98%80", "mut_x", "run_"),
);
const resolve = (id: string) => (id === "live" ? liveRunId : id);

interface Sent {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

async function expectNoServerError(req: Sent): Promise<void> {
  let res: Response;
  try {
    const headers: Record<string, string> = { ...req.headers };
    res = await api(req.path, { method: req.method, body: req.body, headers });
  } catch (err) {
    // A request the fetch API itself refuses (a header value it will not send) never reaches the Worker.
    if (err instanceof TypeError) return;
    throw err;
  }
  const label = `${req.method} ${req.path} ${JSON.stringify(req.headers ?? {})} ${(req.body ?? "").slice(0, 300)}`;
  const type = res.headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream")) {
    await res.body?.cancel();
    expect(res.status, label).toBe(200);
    return;
  }
  const text = await res.text();
  expect(res.status, `${label} → ${text.slice(0, 300)}`).toBeLessThan(res.status === 503 ? 504 : 500);
  if (res.status >= 400) {
    expect(type, label).toMatch(/^application\/json/);
    const body = JSON.parse(text) as { error?: unknown; message?: unknown };
    expect(typeof body.error, label).toBe("string");
    expect(typeof body.message, label).toBe("string");
    if (res.status === 503) expect(body.error, label).toMatch(/^storage_/);
  }
}

const SLACK_SECRET = "fuzz-signing-secret";
const FUZZ_TEAM = "T0FUZZ";
/** The runtime's bindings with the Slack app on; its Web API calls go to the stand-in. */
const slackEnv = {
  ...env,
  SLACK_SIGNING_SECRET: SLACK_SECRET,
  SLACK_BOT_TOKEN: "xoxb-fuzz",
  SLACK_API_BASE_URL: `${env.SLACK_STAND_IN_URL}/api/`,
  // The installation's team, so garbage that names it reaches the listeners past the team scope (contract section 19).
  SLACK_TEAM_ID: FUZZ_TEAM,
} as unknown as Env;

async function slackSignature(timestamp: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(SLACK_SECRET), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`v0:${timestamp}:${body}`));
  return `v0=${Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** A body signed as Slack signs it, sent to the Slack route's handler with the app on. */
async function expectSlackNoServerError(route: "events" | "interactivity", body: string, type: string): Promise<void> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": await slackSignature(timestamp, body),
  };
  if (type !== "") headers["content-type"] = type;
  const ctx = createExecutionContext();
  const res = await handleSlackRequest(
    new Request(`https://engine.test/slack/${route}`, { method: "POST", headers, body }),
    slackEnv,
    ctx,
    route,
  );
  await waitOnExecutionContext(ctx);
  const text = await res.text();
  const label = `${route} ${type} ${body.slice(0, 300)} → ${res.status} ${text.slice(0, 300)}`;
  expect(res.status, label).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers.get("content-type"), label).toMatch(/^application\/json/);
    expect((JSON.parse(text) as { error: string }).error, label).toBe(res.status === 413 ? "payload_too_large" : "bad_request");
  }
}

/** Odd values in the places slack-edge and the app read: ids, users, actions, views, authorizations. */
const slackOdd: fc.Arbitrary<unknown> = fc.oneof(
  oddValue,
  fc.constantFrom([null], [{}], [[]], { id: null }, { id: 5 }, "C1", { values: null }, [{ action_id: null }]),
);
const slackEventBody = fc
  .record(
    {
      type: fc.oneof(fc.constantFrom("event_callback", "url_verification", "app_rate_limited", "x"), slackOdd),
      challenge: slackOdd,
      event_id: slackOdd,
      team_id: fc.oneof(slackOdd, fc.constant(FUZZ_TEAM)),
      enterprise_id: slackOdd,
      authorizations: slackOdd,
      is_ext_shared_channel: slackOdd,
      event: fc.oneof(
        slackOdd,
        fc.record(
          {
            type: fc.oneof(fc.constantFrom("app_mention", "message", "app_uninstalled", "tokens_revoked", "reaction_added"), slackOdd),
            user: slackOdd,
            user_team: fc.oneof(slackOdd, fc.constant(FUZZ_TEAM)),
            team: fc.oneof(slackOdd, fc.constant(FUZZ_TEAM)),
            channel: slackOdd,
            channel_type: fc.oneof(fc.constant("im"), slackOdd),
            text: slackOdd,
            ts: slackOdd,
            thread_ts: slackOdd,
            bot_id: slackOdd,
            item: slackOdd,
            message: slackOdd,
          },
          { requiredKeys: [] },
        ),
      ),
    },
    { requiredKeys: [] },
  )
  .map((body) => JSON.stringify(body));
const slackInteraction = fc.record(
  {
    type: fc.oneof(fc.constantFrom("block_actions", "view_submission", "view_closed", "shortcut", "x"), slackOdd),
    user: fc.oneof(slackOdd, fc.constant({ id: "U1" }), fc.constant({ id: "U1", team_id: FUZZ_TEAM })),
    team: fc.oneof(slackOdd, fc.constant({ id: FUZZ_TEAM }), fc.record({ id: fc.constant(FUZZ_TEAM), enterprise_id: slackOdd })),
    enterprise: slackOdd,
    trigger_id: slackOdd,
    channel: fc.oneof(slackOdd, fc.constant({ id: "C1" })),
    message: slackOdd,
    container: slackOdd,
    actions: fc.oneof(
      slackOdd,
      fc.array(
        fc.record(
          {
            action_id: fc.oneof(fc.constantFrom("approval_approve", "approval_deny", "input_answer", "other"), slackOdd),
            value: fc.oneof(slackOdd, fc.constant('{"run_id":"run_x","approval_id":"a","level":"approve"}')),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 2 },
      ),
    ),
    view: fc.oneof(
      slackOdd,
      fc.record(
        {
          callback_id: fc.oneof(fc.constantFrom("approval_confirm", "input_answer"), slackOdd),
          private_metadata: fc.oneof(slackOdd, fc.constant('{"kind":"input","run_id":"run_x","tool_call_id":"t","channel_id":"C1"}')),
          state: fc.oneof(slackOdd, fc.constant({ values: { answer: { text: { value: "v" } } } })),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);
const slackInteractionBody = fc.oneof(
  slackInteraction.map((p) => new URLSearchParams({ payload: JSON.stringify(p) }).toString()),
  anyBodyText.map((t) => new URLSearchParams({ payload: t }).toString()),
  fc.constantFrom("payload=", "payload", "x=1", "payload=%E0%A4%A", "payload=%7B", "&&&", "payload=null&payload=1"),
);
const slackContentType = fc.constantFrom("application/json", "application/x-www-form-urlencoded", "", "text/plain");

/** Console cookie values: odd MACs (1 or 5 characters, padding, non-base64url), odd ids, odd shapes. */
const hexId = fc.array(fc.constantFrom(..."0123456789abcdef"), { minLength: 32, maxLength: 32 }).map((cs) => cs.join(""));
const consoleCookie = fc.oneof(
  fc
    .tuple(
      hexId,
      fc.oneof(fc.string({ unit: fc.constantFrom(..."ABCxyz019-_+/="), maxLength: 60 }), fc.constantFrom("a", "abcde", "====", "")),
    )
    .map(([id, mac]) => `${id}.${mac}`),
  fc.tuple(oddString, oddString).map(([a, b]) => `${a}.${b}`.replace(/[^\x21-\x7e]/g, "x").replace(/;/g, ",")),
  fc.constantFrom("", ".", "..", "a.b.c", `${"0".repeat(32)}.a`, `${"0".repeat(32)}.${"A".repeat(43)}`),
);

beforeAll(async () => {
  const { status, json } = await trigger({ message: "fuzz target", script: [{ text: "done" }] });
  expect(status).toBe(202);
  liveRunId = json.run_id;
});

/** Each family takes a few seconds in CI; generous, since a loaded machine is slower. */
const FAMILY_TIMEOUT_MS = 120_000 * SCALE;

describe("no input gets a 500", { timeout: FAMILY_TIMEOUT_MS }, () => {
  it("POST /api/trigger", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { weight: 2, arbitrary: nearValidTrigger },
          { weight: 2, arbitrary: anyBodyText },
          // Deep tool-call arguments inside an otherwise valid script (issue 9's first finding).
          deepText.map((deep) => `{"message":"m","script":[{"tool_calls":[{"tool_name":"human__ask","arguments":{"a":${deep}}}]}]}`),
          fieldsBody(["message", "channel_id", "user_id", "delivery_id", "max_tool_calls", "script"]),
        ),
        contentType,
        fc.option(fc.constantFrom("text/event-stream", "application/json", "*/*")),
        // Header values are bytes: ASCII odd text (a non-ASCII value only makes the runtime warn).
        fc.option(fc.oneof(fc.string({ unit: "binary-ascii", maxLength: 12 }), fc.constantFrom("k1", "x".repeat(201), " ", "\t"))),
        async (body, type, accept, idempotencyKey) => {
          const headers: Record<string, string> = {};
          if (type !== "") headers["content-type"] = type;
          if (accept !== null) headers.accept = accept;
          if (idempotencyKey !== null) headers["idempotency-key"] = idempotencyKey;
          await expectNoServerError({ method: "POST", path: "/api/trigger", body, headers });
        },
      ),
      { numRuns: runs(800) },
    );
  });

  it("POST /api/runs/{run_id}/approvals/{approval_id}", async () => {
    await fc.assert(
      fc.asyncProperty(
        pathId,
        pathId,
        fc.oneof(anyBodyText, fieldsBody(["decision", "decided_by", "reason", "confirmation"]), fc.constant('{"decision":"deny"}')),
        async (runId, approvalId, body) => {
          await expectNoServerError({ method: "POST", path: `/api/runs/${resolve(runId)}/approvals/${approvalId}`, body });
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it("POST /api/runs/{run_id}/inputs/{tool_call_id}", async () => {
    await fc.assert(
      fc.asyncProperty(
        pathId,
        pathId,
        fc.oneof(anyBodyText, fieldsBody(["answer", "answered_by"]), fc.constant('{"answer":"a"}')),
        async (runId, toolCallId, body) => {
          await expectNoServerError({ method: "POST", path: `/api/runs/${resolve(runId)}/inputs/${toolCallId}`, body });
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it("POST /api/mutations/{mutation_id}/reconcile", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(pathId, fc.constantFrom("mut_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
        fc.oneof(anyBodyText, fieldsBody(["outcome", "evidence", "reconciled_by"]), fc.constant('{"outcome":"completed","evidence":"e"}')),
        async (mutationId, body) => {
          await expectNoServerError({ method: "POST", path: `/api/mutations/${mutationId}/reconcile`, body });
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it("GET /api/runs/{run_id}/events and the other id routes", async () => {
    await fc.assert(
      fc.asyncProperty(
        pathId,
        fc.constantFrom("/events", "", "/mutations", "/cancel", "/approvals", "/events/x"),
        fc.option(fc.oneof(oddString, oddNumberText, fc.constantFrom("0", "1", "99999999999999999999"))),
        fc.option(fc.oneof(oddString, oddNumberText)),
        fc.option(oddString),
        fc.constantFrom("GET", "POST", "DELETE", "PUT"),
        async (runId, suffix, after, lastEventId, clientKey, method) => {
          const query = new URLSearchParams();
          if (after !== null) query.set("after", after);
          if (clientKey !== null) query.set("client_key", clientKey.replace(/[\ud800-\udfff]/g, "?"));
          const headers: Record<string, string> = { accept: "text/event-stream" };
          if (lastEventId !== null) headers["last-event-id"] = lastEventId.replace(/[^\x20-\x7e]/g, "?");
          const path = `/api/runs/${resolve(runId)}${suffix}${query.size > 0 ? `?${query}` : ""}`;
          await expectNoServerError({ method, path, headers });
          await expectNoServerError({ method: "GET", path: `/api/deliveries/${runId}` });
          await expectNoServerError({ method: "GET", path: `/api/mutations/${runId}` });
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it("POST /slack/events and /slack/interactivity, signed garbage", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.tuple(fc.constant("events" as const), fc.oneof(slackEventBody, anyBodyText, slackInteractionBody)),
          fc.tuple(fc.constant("interactivity" as const), fc.oneof(slackInteractionBody, anyBodyText, slackEventBody)),
        ),
        slackContentType,
        async ([route, body], type) => expectSlackNoServerError(route, body, type),
      ),
      { numRuns: runs(300) },
    );
  });

  it("console cookies on /api/* and /console*", async () => {
    await fc.assert(
      fc.asyncProperty(
        consoleCookie,
        fc.constantFrom("/api/runs", "/api/inputs", "/api/approvals", "/api/runs/run_x", "/console", "/console/app.js", "/console/session"),
        fc.constantFrom("GET", "POST", "DELETE"),
        async (cookie, path, method) => {
          const res = await SELF.fetch(`https://engine.test${path}`, {
            method,
            // A fresh client address each: the failures would otherwise pass the auth rate limit (429, section 18).
            headers: { cookie: `console_session=${cookie}`, origin: "https://engine.test", "cf-connecting-ip": freshAddress() },
          });
          const text = await res.text();
          const label = `${method} ${path} console_session=${cookie} → ${res.status} ${text.slice(0, 200)}`;
          expect(res.status, label).toBeLessThan(500);
          if (path.startsWith("/api/")) expect(res.status, label).toBe(401);
        },
      ),
      { numRuns: runs(300) },
    );
  });
});
