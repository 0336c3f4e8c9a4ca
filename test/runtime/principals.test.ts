// Actor fields and requesters (contract section 18) in workerd against real
// D1: the engine records the request's principal as decided_by/answered_by/
// reconciled_by, refuses a body naming anyone else (403 actor_mismatch), and
// records a trigger's requested_by, with on_behalf_of only from an adapter.
// Also the JSON media-type rule (415) every JSON route keeps.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, apiAs, namedToken, TOKEN } from "./helpers";

const CREATE = "mcp__demo__create_dashboard";

async function json(res: Response): Promise<any> {
  return res.json();
}

async function pendingApproval(token: string, runId: string): Promise<string> {
  let approval: { approval_id: string } | undefined;
  await expect
    .poll(async () => {
      approval = (await json(await apiAs(token, `/api/runs/${runId}`))).pending_approvals[0];
      return approval !== undefined;
    })
    .toBe(true);
  return approval!.approval_id;
}

async function eventsOf(runId: string): Promise<any[]> {
  const text = await (await api(`/api/runs/${runId}/events`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
}

describe("actor fields are the principal", () => {
  it("a decision naming someone else (automatic, a Slack user) is 403 actor_mismatch and leaves the approval pending", async () => {
    const approver = await namedToken(["approver"], "approver");
    const started = await json(
      await api("/api/trigger", {
        method: "POST",
        body: JSON.stringify({
          message: "x",
          script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "w1", arguments: { title: "actor" } }] }],
        }),
      }),
    );
    const approvalId = await pendingApproval(approver.token, started.run_id);
    for (const decided_by of ["automatic", "slack:UAPPROVER1", "token:root", "console:alice"]) {
      const res = await apiAs(approver.token, `/api/runs/${started.run_id}/approvals/${approvalId}`, {
        method: "POST",
        body: JSON.stringify({ decision: "approve", decided_by }),
      });
      expect(res.status, decided_by).toBe(403);
      expect(await json(res)).toMatchObject({ error: "actor_mismatch", message: expect.stringContaining(approver.principal) });
    }
    expect(await pendingApproval(approver.token, started.run_id)).toBe(approvalId);

    const res = await apiAs(approver.token, `/api/runs/${started.run_id}/approvals/${approvalId}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
    expect(res.status).toBe(200);
    await expect
      .poll(async () => (await eventsOf(started.run_id)).find((e) => e.type === "approval_resolved"))
      .toMatchObject({ decision: "denied", decided_by: approver.principal });
  });

  it("an answer is recorded as the principal; naming the principal itself is accepted", async () => {
    const approver = await namedToken(["approver"], "answerer");
    const started = await json(
      await api("/api/trigger", {
        method: "POST",
        body: JSON.stringify({
          message: "x",
          script: [{ tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question: "?" } }] }, { text: "ok" }],
        }),
      }),
    );
    await expect.poll(async () => (await json(await api(`/api/runs/${started.run_id}`))).pending_inputs.length).toBe(1);
    const wrong = await apiAs(approver.token, `/api/runs/${started.run_id}/inputs/ask-1`, {
      method: "POST",
      body: JSON.stringify({ answer: "a", answered_by: "token:root" }),
    });
    expect(wrong.status).toBe(403);
    expect((await json(wrong)).error).toBe("actor_mismatch");
    const right = await apiAs(approver.token, `/api/runs/${started.run_id}/inputs/ask-1`, {
      method: "POST",
      body: JSON.stringify({ answer: "a", answered_by: approver.principal }),
    });
    expect(right.status).toBe(200);
    await expect
      .poll(async () => (await eventsOf(started.run_id)).find((e) => e.type === "human_input_received")?.answered_by)
      .toBe(approver.principal);
  });
});

describe("requested_by and on_behalf_of", () => {
  it("a requester's run is requested by it; naming another user_id is 403 forbidden for anyone but an adapter", async () => {
    const requester = await namedToken(["requester"], "req");
    const refused = await apiAs(requester.token, "/api/trigger", {
      method: "POST",
      body: JSON.stringify({ message: "x", user_id: "U0CEO0001" }),
    });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({
      error: "forbidden",
      message: expect.stringContaining(`${requester.principal} lacks the adapter role`),
    });

    const own = await apiAs(requester.token, "/api/trigger", { method: "POST", body: JSON.stringify({ message: "x" }) });
    expect(own.status).toBe(202);
    const { run_id } = await json(own);
    const summary = await json(await api(`/api/runs/${run_id}`));
    expect(summary).toMatchObject({ user_id: requester.principal, requested_by: requester.principal });
    expect(summary).not.toHaveProperty("on_behalf_of");
  });

  it("admin does not imply adapter: an admin token (and token:root) naming another user_id is 403, adapter named in the message", async () => {
    const admin = await namedToken(["admin"], "boss");
    for (const [token, principal] of [
      [admin.token, admin.principal],
      [TOKEN, "token:root"],
    ] as const) {
      const refused = await apiAs(token, "/api/trigger", { method: "POST", body: JSON.stringify({ message: "x", user_id: "chat:ada" }) });
      expect(refused.status).toBe(403);
      expect(await json(refused)).toMatchObject({
        error: "forbidden",
        message: expect.stringContaining(`${principal} lacks the adapter role`),
      });
    }
  });

  it("an on_behalf_of not in canonical form is 400, from an adapter too; nothing starts", async () => {
    const adapter = await namedToken(["adapter"], "relay");
    for (const user_id of [
      " UALICE",
      "UALICE ",
      "U\u200bALICE",
      "\ufeffaccess:alice@acme.com",
      "access:Alice@acme.com",
      "mailto:alice@acme.com",
      "cafe\u0301",
    ]) {
      const res = await apiAs(adapter.token, "/api/trigger", { method: "POST", body: JSON.stringify({ message: "x", user_id }) });
      expect(res.status, JSON.stringify(user_id)).toBe(400);
      expect(await json(res)).toMatchObject({ error: "invalid_request" });
    }
  });

  it("an adapter triggers on behalf of someone: user_id and on_behalf_of on run_started, the summary and the run listing", async () => {
    const adapter = await namedToken(["adapter"], "relay");
    const channel = `C-relay-${crypto.randomUUID().slice(0, 8)}`;
    const res = await apiAs(adapter.token, "/api/trigger", {
      method: "POST",
      body: JSON.stringify({ message: "x", channel_id: channel, user_id: "chat:ada" }),
    });
    expect(res.status).toBe(202);
    const { run_id } = await json(res);
    const expected = { user_id: "chat:ada", requested_by: adapter.principal, on_behalf_of: "chat:ada" };
    await expect.poll(async () => (await eventsOf(run_id))[0]).toMatchObject({ type: "run_started", ...expected });
    expect(await json(await api(`/api/runs/${run_id}`))).toMatchObject(expected);
    await expect
      .poll(async () => (await json(await api(`/api/runs?channel_id=${channel}`))).runs[0])
      .toMatchObject({ run_id, ...expected });
  });
});

describe("JSON routes need Content-Type: application/json", () => {
  it("answers 415 without it or with a form/text type, before reading the body", async () => {
    for (const contentType of [null, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const headers = new Headers({ authorization: `Bearer ${(await namedToken(["requester"], "ct")).token}` });
      if (contentType !== null) headers.set("content-type", contentType);
      const res = await SELF.fetch("https://engine.test/api/trigger", { method: "POST", headers, body: '{"message":"x"}' });
      expect(res.status, String(contentType)).toBe(415);
      expect((await json(res)).error).toBe("unsupported_media_type");
    }
  });
});
