// The audit chain in workerd against real D1 and miniflare's local R2
// (contract section 25): the one sealer chains entries from many writers
// with no gap and no fork (D1 itself refuses a second seq, a wrong link and a
// second seal), its alarm fired deterministically; a coalesced refusal waits
// for its minute to close; signed checkpoints on demand (201, then 200 while
// the head has not moved, 429 within a minute), listed, with the public key;
// each checkpoint's entries copied to R2 once and never overwritten; the
// export streams what the verifier accepts. AUDIT_SIGNING_KEY is RFC 8037's
// example key (vitest.config.ts), its thumbprint the RFC's.
import { env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { RefusalQueue } from "../../src/audit/refusal-queue";
import { auditHealth } from "../../src/audit/audit-health";
import { describe, expect, it } from "vitest";
import { verifyAuditExport } from "../../src/client/audit-chain";
import { api, apiAs, namedToken } from "./helpers";
import { runRetention } from "../../src/operate/retention";

const RFC8037_THUMBPRINT = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";
const RFC8037_PUBLIC = {
  kty: "OKP" as const,
  crv: "Ed25519" as const,
  x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
  kid: RFC8037_THUMBPRINT,
};

const sealer = () => env.AUDIT_SEALER.get(env.AUDIT_SEALER.idFromName("audit"));

let counter = 0;
async function writeEntry(extra: Record<string, unknown> = {}): Promise<string> {
  counter += 1;
  const id = `aud_test_${Date.now()}_${counter}_${crypto.randomUUID().slice(0, 8)}`;
  await env.DB.prepare(
    "INSERT INTO audit_log (id, at, principal, action, target, result, details, via) VALUES (?, ?, ?, 'token.create', ?, 'ok', ?, 'api')",
  )
    .bind(id, new Date().toISOString(), `token:w${counter % 7}`, `token:x${counter}`, JSON.stringify({ n: counter, ...extra }))
    .run();
  return id;
}

async function rowOf(id: string): Promise<{ seq: number | null; prev_hash: string | null; hash: string | null; count: number | null }> {
  return (await env.DB.prepare("SELECT seq, prev_hash, hash, count FROM audit_log WHERE id = ?").bind(id).first())!;
}

async function head(): Promise<{ seq: number; hash: string }> {
  return (await env.DB.prepare("SELECT seq, hash FROM audit_chain WHERE id = 1").first())!;
}

async function exportText(query = ""): Promise<{ status: number; text: string; sealedThrough: string | null }> {
  const res = await api(`/api/audit/export${query}`);
  return { status: res.status, text: await res.text(), sealedThrough: res.headers.get("sealed-through-seq") };
}

describe("sealing (contract section 25)", () => {
  it("many concurrent writers and concurrent seals: seq 1, 2, … with no gap, each prev_hash the previous hash, and the export verifies", async () => {
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 120; i++) {
      writes.push(writeEntry());
      // Seals race the writes, from the object and from a second stub of it.
      if (i % 15 === 0) writes.push(sealer().seal(), env.AUDIT_SEALER.get(env.AUDIT_SEALER.idFromName("audit")).seal());
    }
    await Promise.all(writes);
    await sealer().seal();
    const { results } = await env.DB.prepare("SELECT seq, prev_hash, hash FROM audit_log WHERE seq IS NOT NULL ORDER BY seq").all<{
      seq: number;
      prev_hash: string;
      hash: string;
    }>();
    expect(results.length).toBeGreaterThanOrEqual(120);
    expect(results.map((r) => r.seq)).toEqual(results.map((_, i) => i + 1));
    expect(results[0]!.prev_hash).toBe(`sha256:${"0".repeat(64)}`);
    for (let i = 1; i < results.length; i++) expect(results[i]!.prev_hash).toBe(results[i - 1]!.hash);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE seq IS NULL").first<{ n: number }>())!.n).toBe(0);
    const exported = await exportText();
    expect(exported.status).toBe(200);
    expect(Number(exported.sealedThrough)).toBe(results.length);
    const report = await verifyAuditExport(exported.text.split("\n"));
    expect(report).toMatchObject({ ok: true, entries: results.length, first_seq: 1, last_seq: results.length });
  });

  it("D1 refuses a fork: a second seq for one position, a link that is not the head's, a second seal of one entry", async () => {
    await writeEntry();
    await sealer().seal();
    const top = await head();
    const id = await writeEntry();
    const stmt = (seq: number, prev: string) =>
      env.DB.prepare("UPDATE audit_log SET seq = ?, prev_hash = ?, hash = ? WHERE id = ?").bind(seq, prev, `sha256:${"1".repeat(64)}`, id);
    await expect(stmt(top.seq, top.hash).run()).rejects.toThrow();
    await expect(stmt(top.seq + 1, `sha256:${"2".repeat(64)}`).run()).rejects.toThrow(/not the next link/);
    await expect(stmt(top.seq + 2, top.hash).run()).rejects.toThrow(/not the next link/);
    await sealer().seal();
    const sealed = await rowOf(id);
    expect(sealed.seq).toBe(top.seq + 1);
    await expect(
      env.DB.prepare("UPDATE audit_log SET hash = ? WHERE id = ?")
        .bind(`sha256:${"3".repeat(64)}`, id)
        .run(),
    ).rejects.toThrow(/already sealed/);
  });

  it("a write wakes the sealer; its alarm (fired here) seals within one run", async () => {
    const admin = await namedToken(["admin"], "wake");
    const name = `wake-${crypto.randomUUID().slice(0, 8)}`;
    const created = await apiAs(admin.token, "/api/tokens", { method: "POST", body: JSON.stringify({ name, roles: ["viewer"] }) });
    expect(created.status).toBe(201);
    const entry = await env.DB.prepare("SELECT id, seq FROM audit_log WHERE target = ?")
      .bind(`token:${name}`)
      .first<{ id: string; seq: number | null }>();
    expect(entry).not.toBeNull();
    // The Worker armed the alarm (after the response, in waitUntil); fire it now.
    await expect.poll(() => runDurableObjectAlarm(sealer()), { timeout: 5_000, interval: 20 }).toBe(true);
    await expect.poll(async () => (await rowOf(entry!.id)).seq).not.toBeNull();
  });

  it("a coalesced refusal (the refusal queue's own flush) is sealed only once its minute is closed, and a sealed refusal's count is never changed", async () => {
    const principal = `token:refused-${crypto.randomUUID().slice(0, 8)}`;
    const queue = env.AUDIT_QUEUE.get(env.AUDIT_QUEUE.idFromName(principal));
    // A minute that is already over by the wall clock, so the sealer's own grace rule does not decide it; the flush's `now` does.
    const minuteStart = (Math.floor(Date.now() / 60_000) - 2) * 60_000;
    const refuse = (flushAt: number) =>
      runInDurableObject(queue, async (_instance, state) => {
        const refusals = new RefusalQueue(state.storage.sql);
        refusals.enqueue({ principal, action: "access.refused", target: "GET /api/x", at: new Date(minuteStart + 1_000).toISOString() });
        return refusals.flush(env.DB, flushAt);
      });
    const row = () => env.DB.prepare("SELECT id, count, seq, closed FROM audit_log WHERE principal = ?").bind(principal).first<any>();
    await refuse(minuteStart + 2_000);
    await refuse(minuteStart + 3_000);
    const later = await writeEntry();
    await sealer().seal();
    expect(await row()).toMatchObject({ count: 2, closed: 0, seq: null });
    // Entries after it are not held back.
    expect((await rowOf(later)).seq).not.toBeNull();
    // The minute closes: its last flush marks it closed, and the sealer chains it.
    await refuse(minuteStart + 61_000);
    expect(await row()).toMatchObject({ count: 3, closed: 1, seq: null });
    await sealer().seal();
    const sealed = await row();
    expect(sealed).toMatchObject({ count: 3, seq: expect.any(Number) });
    // A late refusal of that minute changes nothing sealed.
    await refuse(minuteStart + 62_000);
    expect(await row()).toMatchObject({ count: 3, seq: sealed.seq });
    const exported = await exportText();
    expect(await verifyAuditExport(exported.text.split("\n"))).toMatchObject({ ok: true });
  });
});

describe("checkpoints and the R2 copy (contract section 25)", () => {
  it("POST signs the head (201, audited), then 200 with the same checkpoint while the head has not moved, 429 within a minute; listed, with its key", async () => {
    await writeEntry();
    const made = await api("/api/audit/checkpoints", { method: "POST" });
    expect(made.status).toBe(201);
    const checkpoint = await made.json<any>();
    expect(checkpoint).toEqual({
      seq: expect.any(Number),
      hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      at: expect.any(String),
      kid: RFC8037_THUMBPRINT,
      signature: expect.stringMatching(/^[A-Za-z0-9_-]{86}$/),
    });
    expect(checkpoint).toMatchObject(await head());
    // The request itself is the last entry it signs.
    const last = await env.DB.prepare("SELECT action, principal FROM audit_log WHERE seq = ?").bind(checkpoint.seq).first();
    expect(last).toEqual({ action: "audit.checkpoint", principal: "token:root" });
    const again = await api("/api/audit/checkpoints", { method: "POST" });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(checkpoint);
    await writeEntry();
    const tooSoon = await api("/api/audit/checkpoints", { method: "POST" });
    expect(tooSoon.status).toBe(429);
    expect(await tooSoon.json()).toMatchObject({ error: "rate_limited" });
    expect(Number(tooSoon.headers.get("retry-after"))).toBeGreaterThan(0);

    const viewer = await namedToken(["viewer"], "cpv");
    const listed = await (await apiAs(viewer.token, "/api/audit/checkpoints?limit=1")).json<any>();
    expect(listed.checkpoints[0]).toEqual(checkpoint);
    const keys = await (await apiAs(viewer.token, "/api/audit/public-key")).json<any>();
    expect(keys).toEqual({ keys: [RFC8037_PUBLIC] });
    expect((await apiAs(viewer.token, "/api/audit/checkpoints", { method: "POST" })).status).toBe(403);
    expect((await apiAs(viewer.token, "/api/audit/export")).status).toBe(403);
  });

  it("each checkpoint's entries are in R2 once, at audit/<yyyy>/<mm>/<dd>/<from>-<to>.jsonl, byte for byte the export, never overwritten", async () => {
    const { results } = await env.DB.prepare("SELECT seq, at, copy_from, r2_key FROM audit_checkpoints ORDER BY seq").all<any>();
    expect(results.length).toBeGreaterThan(0);
    for (const cp of results) {
      const pad = (n: number) => String(n).padStart(12, "0");
      expect(cp.r2_key).toBe(
        `audit/${cp.at.slice(0, 4)}/${cp.at.slice(5, 7)}/${cp.at.slice(8, 10)}/${pad(cp.copy_from)}-${pad(cp.seq)}.jsonl`,
      );
      const object = await env.AUDIT_BUCKET.get(cp.r2_key);
      expect(object).not.toBeNull();
      const text = await object!.text();
      const exported = await exportText(`?from_seq=${cp.copy_from}&to_seq=${cp.seq}`);
      expect(text).toBe(exported.text);
      expect(await verifyAuditExport(text.split("\n"), [RFC8037_PUBLIC])).toMatchObject({ ok: true, last_seq: cp.seq });
    }
    // A copy that is due again (its D1 mark lost) finds the object there and leaves it as it was.
    const first = results[0]!;
    const before = await env.AUDIT_BUCKET.head(first.r2_key);
    await env.DB.prepare("UPDATE audit_checkpoints SET r2_key = NULL WHERE seq = ?").bind(first.seq).run();
    await sealer().wake();
    await runDurableObjectAlarm(sealer());
    const after = await env.AUDIT_BUCKET.head(first.r2_key);
    expect(after!.etag).toBe(before!.etag);
    expect(after!.uploaded.getTime()).toBe(before!.uploaded.getTime());
    expect((await env.DB.prepare("SELECT r2_key FROM audit_checkpoints WHERE seq = ?").bind(first.seq).first<any>()).r2_key).toBe(
      first.r2_key,
    );
  });

  it("the export: the signed chain verifies with the key; a range opens at the checkpoint before it; bad queries are 400; OCSF API Activity", async () => {
    const all = await exportText();
    expect(await verifyAuditExport(all.text.split("\n"), [RFC8037_PUBLIC])).toMatchObject({ ok: true });
    const cp = await env.DB.prepare("SELECT seq FROM audit_checkpoints ORDER BY seq LIMIT 1").first<{ seq: number }>();
    const ranged = await exportText(`?from_seq=${cp!.seq + 1}`);
    const lines = ranged.text.trim().split("\n");
    expect(JSON.parse(lines[0]!)).toHaveProperty("checkpoint.seq", cp!.seq);
    expect(JSON.parse(lines[1]!)).toHaveProperty("entry.seq", cp!.seq + 1);
    expect((await verifyAuditExport(lines, [RFC8037_PUBLIC])).ok).toBe(true);
    const unanchored = (await exportText("?from_seq=2&to_seq=2")).text.trim().split("\n");
    expect(JSON.parse(unanchored[0]!)).toEqual({ anchor: "none" });
    for (const bad of ["?from_seq=5&to_seq=4", "?format=csv", "?from_seq=0", "?extra=1"]) {
      const res = await api(`/api/audit/export${bad}`);
      expect(res.status, bad).toBe(400);
      expect(await res.json<any>(), bad).toMatchObject({ error: "invalid_request" });
    }
    const ocsf = (await exportText("?format=ocsf&from_seq=1&to_seq=3")).text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const event = ocsf.find((l) => l.class_uid !== undefined && l.api.operation === "token.create");
    expect(event).toMatchObject({
      metadata: { version: "1.6.0", uid: expect.stringMatching(/^sha256:/), original_event_uid: expect.any(String) },
      class_uid: 6003,
      category_uid: 6,
      activity_id: 1,
      type_uid: 600301,
      severity_id: 1,
      status_id: 1,
      time: expect.any(Number),
      api: { operation: "token.create", service: { name: "approved-execution-engine" } },
      src_endpoint: { name: "api" },
      unmapped: { seq: expect.any(Number), prev_hash: expect.stringMatching(/^sha256:/) },
    });
  });

  it("GET /api/audit lists sealed entries with seq, prev_hash, hash, and the head as sealed_through_seq", async () => {
    await sealer().seal();
    const page = await (await api("/api/audit?limit=20")).json<any>();
    expect(page.sealed_through_seq).toBe((await head()).seq);
    const sealed = page.entries.find((e: any) => e.seq === page.sealed_through_seq);
    expect(sealed).toMatchObject({
      seq: expect.any(Number),
      prev_hash: expect.any(String),
      hash: expect.any(String),
      via: expect.any(String),
    });
    // Entries still unsealed (a refusal the queue wrote since) are listed without seq, prev_hash, hash.
    for (const e of page.entries.filter((x: any) => x.seq === undefined)) expect(e).not.toHaveProperty("hash");
  });
});

describe("health (contract sections 22 and 25)", () => {
  it("audit is degraded when an entry waits unsealed over 5 minutes or a checkpoint's R2 copy is missing, unsigned without the key", async () => {
    const now = Date.now();
    await sealer().seal();
    expect(await auditHealth(env.DB, { signed: true, bucket: true, now })).toBe("ok");
    expect(await auditHealth(env.DB, { signed: false, bucket: true, now })).toBe("unsigned");
    const id = await writeEntry();
    expect(await auditHealth(env.DB, { signed: true, bucket: true, now: now + 6 * 60_000 })).toBe("degraded");
    await sealer().seal();
    expect((await rowOf(id)).seq).not.toBeNull();
    const cp = (await env.DB.prepare("SELECT seq, r2_key FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").first<any>())!;
    await env.DB.prepare("UPDATE audit_checkpoints SET r2_key = NULL WHERE seq = ?").bind(cp.seq).run();
    expect(await auditHealth(env.DB, { signed: true, bucket: true, now: now + 2 * 60_000 })).toBe("degraded");
    expect(await auditHealth(env.DB, { signed: true, bucket: false, now: now + 2 * 60_000 })).toBe("ok");
    // The sealer's alarm lands the copy again (the object is already there and is kept).
    await sealer().wake();
    await runDurableObjectAlarm(sealer());
    expect(await auditHealth(env.DB, { signed: true, bucket: true, now: now + 2 * 60_000 })).toBe("ok");
    const health = await (await api("/api/health")).json<any>();
    expect(health.audit).toBe("ok");
  });
});

describe("via and client_ip (contract section 25)", () => {
  it("an API change is via api with the client's address, a console sign-in via console; both are hashed and verify", async () => {
    const name = `via-${crypto.randomUUID().slice(0, 8)}`;
    const created = await api("/api/tokens", {
      method: "POST",
      headers: { "cf-connecting-ip": "203.0.113.7" },
      body: JSON.stringify({ name, roles: ["viewer"] }),
    });
    expect(created.status).toBe(201);
    const { token } = await created.json<any>();
    const signIn = await SELF.fetch("https://engine.test/console/session", {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": "198.51.100.9" },
      body: JSON.stringify({ token }),
    });
    expect(signIn.status).toBe(204);
    await sealer().seal();
    const rows = await env.DB.prepare("SELECT action, via, client_ip, seq FROM audit_log WHERE target = ? OR principal = ? ORDER BY seq")
      .bind(`token:${name}`, `token:${name}`)
      .all<any>();
    expect(rows.results).toEqual([
      { action: "token.create", via: "api", client_ip: "203.0.113.7", seq: expect.any(Number) },
      { action: "session.create", via: "console", client_ip: "198.51.100.9", seq: expect.any(Number) },
    ]);
    expect(await verifyAuditExport((await exportText()).text.split("\n"))).toMatchObject({ ok: true });
  });
});

describe("scrub (contract section 25)", () => {
  it("an admin drops an entry's details; its details_hash stays, the chain still verifies, and the scrub is audited", async () => {
    const sealedId = await writeEntry({ secretish: "remove me" });
    await sealer().seal();
    const unsealedId = await writeEntry({ secretish: "me too" });
    for (const id of [sealedId, unsealedId]) {
      const res = await api(`/api/audit/${id}/scrub`, { method: "POST" });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id, scrubbed: true, details_hash: expect.stringMatching(/^sha256:/) });
    }
    await sealer().seal();
    const exported = await exportText();
    expect(exported.text).not.toContain("remove me");
    expect(exported.text).not.toContain("me too");
    expect(await verifyAuditExport(exported.text.split("\n"))).toMatchObject({ ok: true });
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'audit.scrub' AND target = ?").bind(sealedId).first(),
    ).toEqual({ n: 1 });
    expect((await api("/api/audit/aud_nope/scrub", { method: "POST" })).status).toBe(404);
    const viewer = await namedToken(["viewer"], "scrubber");
    expect((await apiAs(viewer.token, `/api/audit/${sealedId}/scrub`, { method: "POST" })).status).toBe(403);
  });
});

describe("retention up to a checkpoint (contract sections 22 and 25)", () => {
  it("deletes entries through the newest checkpoint older than AUDIT_RETENTION_DAYS, keeps that checkpoint, and what is kept still verifies from it; an export from before is 410", async () => {
    await writeEntry();
    await sealer().seal();
    const newest = (await env.DB.prepare("SELECT seq FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").first<{ seq: number }>())!.seq;
    // 401 days from now every checkpoint made here is older than 400 days.
    const later = Date.now() + 401 * 86_400_000;
    const report = await runRetention(
      env.DB,
      { RECEIPT_RETENTION_DAYS: 30, INDEX_RETENTION_DAYS: 90, AUDIT_RETENTION_DAYS: 400, MUTATION_RETENTION_DAYS: undefined },
      later,
    );
    expect(report.deleted.audit).toBe(newest);
    const earliest = (await env.DB.prepare("SELECT MIN(seq) AS seq FROM audit_log WHERE seq IS NOT NULL").first<{ seq: number }>())!.seq;
    expect(earliest).toBe(newest + 1);
    expect(await env.DB.prepare("SELECT seq FROM audit_checkpoints WHERE seq = ?").bind(newest).first()).not.toBeNull();
    const kept = await exportText();
    const lines = kept.text.trim().split("\n");
    expect(JSON.parse(lines[0]!)).toHaveProperty("checkpoint.seq", newest);
    expect(await verifyAuditExport(lines, [RFC8037_PUBLIC])).toMatchObject({ ok: true, first_seq: newest + 1 });
    const gone = await api("/api/audit/export?from_seq=1");
    expect(gone.status).toBe(410);
    expect(await gone.json()).toMatchObject({ error: "retained_from", earliest_seq: newest + 1 });
  });
});
