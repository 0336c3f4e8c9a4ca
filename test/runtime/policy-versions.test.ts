// Policy versions in the runtime (contract section 24), over SELF.fetch with
// the real D1: an active stored version that no longer validates (as after an
// upgrade: written here straight into D1, since no route stores one) makes
// every /api/* route answer 503 bad_config naming it, health says so, and
// nothing falls back to the settings; moving the pointer back repairs it at
// the next request. The migration's one-statement pointer moves: an
// activating insert supersedes the version it replaces and makes the other
// candidates stale; at most one shadow exists. The checkpoint's statement
// commits only while the version it was built from is the active one, and
// names the new one when it is not; the row carries policy_version and hash.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api } from "./helpers";
import { newApprovalId, newRunId, newToolCallId } from "../../src/ids";
import { insertIntent, markDispatchedUnlessPrior } from "../../src/outcomes/mutation-outcomes";

const BAD_DOCUMENT = JSON.stringify({ tools: { mcp__demo__create_dashboard: { level: "bogus" } }, groups: {}, budget: {} });
const HASH = `sha256:${"a".repeat(64)}`;

async function insertVersion(version: number, status: string, document = BAD_DOCUMENT, base = 0): Promise<void> {
  await env.DB.prepare(
    `INSERT INTO policy_versions (version, document, hash, status, base_version, created_by, created_at)
     VALUES (?, ?, ?, ?, ?, 'token:root', '2026-12-01T00:00:00.000Z')`,
  )
    .bind(version, document, HASH, status, base)
    .run();
}

describe("an active stored version that no longer validates", () => {
  it("makes every /api/* route 503 bad_config naming it, until the pointer moves to a valid one", async () => {
    await insertVersion(1, "proposed");
    await env.DB.prepare("UPDATE policy_active SET version = 1, activated_by = 'test', activated_at = 'now' WHERE id = 1").run();
    for (const path of ["/api/runs", "/api/policy", "/api/approvals?status=pending"]) {
      const res = await api(path);
      expect(res.status, path).toBe(503);
      const body = (await res.json()) as { error: string; policy_version: number; message: string; details: { path: string }[] };
      expect(body).toMatchObject({ error: "bad_config", policy_version: 1 });
      expect(body.message).toContain("version 1");
      expect(body.details[0]!.path).toBe("policy_versions.1.TOOL_POLICY.mcp__demo__create_dashboard.level");
    }
    const health = await api("/api/health");
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ policy: { version: 1, state: "bad" } });

    // The repair (in D1 itself: no route can act while every route refuses): the settings again.
    await env.DB.prepare("UPDATE policy_active SET version = 0 WHERE id = 1").run();
    expect((await api("/api/runs")).status).toBe(200);
    const statuses = await env.DB.prepare("SELECT version, status FROM policy_versions ORDER BY version").all();
    expect(statuses.results).toEqual([{ version: 1, status: "superseded" }]);
  });
});

describe("the pointer's statements (migrations/0033)", () => {
  it("an activating insert supersedes the active version and makes the other candidates stale", async () => {
    const valid = JSON.stringify({ tools: {}, groups: {}, budget: {} });
    await insertVersion(10, "proposed", valid);
    await insertVersion(11, "shadow", valid);
    await expect(insertVersion(12, "shadow", valid)).rejects.toThrow(/UNIQUE/);
    await insertVersion(13, "active", valid);
    const pointer = await env.DB.prepare("SELECT version FROM policy_active WHERE id = 1").first<{ version: number }>();
    expect(pointer?.version).toBe(13);
    const rows = await env.DB.prepare("SELECT version, status FROM policy_versions WHERE version >= 10 ORDER BY version").all();
    expect(rows.results).toEqual([
      { version: 10, status: "stale" },
      { version: 11, status: "stale" },
      { version: 13, status: "active" },
    ]);
    const active = (await (await api("/api/policy")).json()) as { version: number; status: string };
    expect(active).toMatchObject({ version: 13, status: "active" });
    await env.DB.prepare("UPDATE policy_active SET version = 0 WHERE id = 1").run();
  });
});

describe("the checkpoint's statement (contract sections 23, 24)", () => {
  it("commits only while the policy version it was built from is active, and names the active one when not", async () => {
    const digest = `sha256:${crypto.randomUUID().replaceAll("-", "").repeat(2)}`;
    const { row } = await insertIntent(env.DB, {
      runId: newRunId(),
      channelId: "C-policy",
      deliveryId: null,
      toolCallId: newToolCallId(),
      approvalId: newApprovalId(),
      toolName: "mcp__demo__create_dashboard",
      argumentsDigest: digest,
      approvedBy: "token:root",
      approvedAt: "2026-12-01T00:00:00.000Z",
      policyVersion: 0,
      policyHash: HASH,
    });
    expect(row).toMatchObject({ policy_version: 0, policy_hash: HASH });
    const refused = await markDispatchedUnlessPrior(env.DB, row.mutation_id, [], 7);
    expect(refused).toMatchObject({ ok: false, error: "policy_changed", policy_version: 0 });
    const again = await env.DB.prepare("SELECT dispatched FROM mutation_outcomes WHERE mutation_id = ?").bind(row.mutation_id).first();
    expect(again).toEqual({ dispatched: 0 });
    const committed = await markDispatchedUnlessPrior(env.DB, row.mutation_id, [], 0);
    expect(committed).toMatchObject({ ok: true });
  });
});
