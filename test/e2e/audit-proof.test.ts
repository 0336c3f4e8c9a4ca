// An audit you can prove, end to end (contract section 25), over loopback
// against one `wrangler dev` with a fresh Ed25519 AUDIT_SIGNING_KEY and
// miniflare's local R2 bound as AUDIT_BUCKET: 1,000 audited actions from
// concurrent runs and tokens are chained with no gap and no fork; the export
// verifies with the built CLI (`approved-exec audit verify`, offline); a copy
// with one byte changed, one line removed, two lines swapped, or a forged
// checkpoint fails naming the right seq; the R2 object of the checkpoint is
// byte for byte the export; and a SIGKILL of wrangler and workerd while
// entries are being appended leaves a chain that still verifies.
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli-process";
import { PROJECT_ROOT, startWorkerServer, WRANGLER_CLI, type WorkerServer } from "../support/worker-server";

const run = promisify(execFile);

/** The contract's figure; each is one audited action (token.create, token.revoke, run.trigger). */
const ACTIONS = 1_000;
const RUNS = 40;
const CONCURRENCY = 16;

let server: WorkerServer;
let dir: string;
let configPath: string;
let keyFile: string;
const { privateKey } = generateKeyPairSync("ed25519");
const jwk = privateKey.export({ format: "jwk" }) as { kty: string; crv: string; d: string; x: string };

/** wrangler.toml with the R2 bucket bound, its paths made absolute (the config lives in a temp directory). */
async function writeConfig(): Promise<string> {
  const toml = await readFile(join(PROJECT_ROOT, "wrangler.toml"), "utf8");
  const path = join(dir, "wrangler.audit.toml");
  await writeFile(
    path,
    `${toml
      .replace('main = "src/index.ts"', `main = "${join(PROJECT_ROOT, "src/index.ts")}"`)
      .replace('migrations_dir = "migrations"', `migrations_dir = "${join(PROJECT_ROOT, "migrations")}"`)
      .replace('= "./src/base/zod-locales.ts"', `= "${join(PROJECT_ROOT, "src/base/zod-locales.ts")}"`)}
[[r2_buckets]]
binding = "AUDIT_BUCKET"
bucket_name = "audit-e2e"
`,
  );
  return path;
}

async function inParallel<T>(count: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await work(i);
      }
    }),
  );
  return results;
}

async function ok(res: Promise<Response>, status: number): Promise<any> {
  const r = await res;
  const body = await r.text();
  expect(r.status, body).toBe(status);
  return body === "" ? null : JSON.parse(body);
}

async function sealedThrough(): Promise<number> {
  return (await ok(server.api("/api/audit?limit=1"), 200)).sealed_through_seq;
}

/** Entries in D1 (sealed or not), read page by page; waits until every one is sealed. */
async function waitAllSealed(atLeast: number): Promise<number> {
  let sealed = 0;
  await expect
    .poll(
      async () => {
        // The newest entries first: once they are all sealed, nothing is left to seal (entries are sealed
        // in order), so the count read after them is the final one, not one a late seal is about to pass.
        const page = await ok(server.api("/api/audit?limit=200"), 200);
        if (!page.entries.every((e: any) => e.seq !== undefined)) return false;
        sealed = await sealedThrough();
        return sealed >= atLeast;
      },
      { timeout: 30_000, interval: 200 },
    )
    .toBe(true);
  return sealed;
}

async function exportFile(name: string, query = ""): Promise<{ path: string; text: string }> {
  const res = await server.api(`/api/audit/export${query}`);
  expect(res.status).toBe(200);
  const text = await res.text();
  const path = join(dir, name);
  await writeFile(path, text);
  return { path, text };
}

async function copyWith(name: string, lines: string[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${lines.join("\n")}\n`);
  return path;
}

const cli = (args: string[]) => runCli(server, args);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aee-audit-e2e-"));
  configPath = await writeConfig();
  server = await startWorkerServer({ AUDIT_SIGNING_KEY: JSON.stringify(jwk) }, { configPath });
  keyFile = join(dir, "public-key.json");
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("an audit you can prove (contract section 25)", () => {
  let checkpoint: { seq: number; hash: string; at: string; kid: string; signature: string };
  let exported: { path: string; text: string };

  it(`${ACTIONS} audited actions from concurrent runs and tokens: one chain, seq 1..N with no gap and no fork, and the export verifies offline`, async () => {
    const requesters = await inParallel(4, (i) =>
      ok(server.api("/api/tokens", { method: "POST", body: JSON.stringify({ name: `req-${i}`, roles: ["requester"] }) }), 201),
    );
    const tokenPairs = (ACTIONS - 4 - RUNS) / 2;
    await Promise.all([
      inParallel(RUNS, (i) =>
        ok(
          fetch(`${server.url}/api/trigger`, {
            method: "POST",
            headers: { authorization: `Bearer ${requesters[i % 4].token}`, "content-type": "application/json" },
            body: JSON.stringify({ message: `run ${i}`, script: [{ text: `done ${i}` }] }),
          }),
          202,
        ),
      ),
      inParallel(tokenPairs, async (i) => {
        await ok(server.api("/api/tokens", { method: "POST", body: JSON.stringify({ name: `bulk-${i}`, roles: ["viewer"] }) }), 201);
        await ok(server.api(`/api/tokens/bulk-${i}`, { method: "DELETE" }), 200);
      }),
    ]);
    const sealed = await waitAllSealed(ACTIONS);
    expect(sealed).toBe(ACTIONS);

    const made = await server.api("/api/audit/checkpoints", { method: "POST" });
    expect(made.status).toBe(201);
    checkpoint = await made.json();
    // The request is itself audited (audit.checkpoint) and signed.
    expect(checkpoint.seq).toBe(ACTIONS + 1);
    await writeFile(keyFile, JSON.stringify(await ok(server.api("/api/audit/public-key"), 200)));

    exported = await exportFile("audit.jsonl");
    const lines = exported.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const entries = lines.filter((l) => l.entry).map((l) => l.entry);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: ACTIONS + 1 }, (_, i) => i + 1));
    expect(new Set(entries.map((e) => e.hash)).size).toBe(entries.length);
    expect(entries.filter((e) => e.action === "run.trigger")).toHaveLength(RUNS);
    expect(lines[lines.length - 1]).toEqual({ checkpoint });

    const verified = await cli(["audit", "verify", exported.path, "--public-key", keyFile]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`${ACTIONS + 1} entries`);
    // Without the key the signatures went unchecked: 3.
    expect((await cli(["audit", "verify", exported.path])).code).toBe(3);
  });

  it("a copy with one byte changed, one line removed, two lines swapped, or a forged checkpoint fails (exit 1) naming the right seq", async () => {
    const lines = exported.text.trim().split("\n");
    const indexOfSeq = (seq: number) => lines.findIndex((l) => l.startsWith('{"entry"') && JSON.parse(l).entry.seq === seq);
    const expectFails = async (name: string, copy: string[], seq: number, check: string) => {
      const result = await cli(["audit", "verify", await copyWith(name, copy), "--public-key", keyFile]);
      expect(result.code, `${name}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stdout, name).toContain(`FAILED at seq ${seq}: ${check}`);
    };
    // One byte: the first character of seq 500's principal.
    const byte = [...lines];
    const line500 = byte[indexOfSeq(500)]!;
    const at = line500.indexOf('"principal":"') + '"principal":"'.length;
    byte[indexOfSeq(500)] = `${line500.slice(0, at)}${line500[at] === "x" ? "y" : "x"}${line500.slice(at + 1)}`;
    await expectFails("byte.jsonl", byte, 500, "hash");
    await expectFails(
      "removed.jsonl",
      lines.filter((_, i) => i !== indexOfSeq(321)),
      321,
      "gap",
    );
    const swapped = [...lines];
    [swapped[indexOfSeq(700)], swapped[indexOfSeq(701)]] = [swapped[indexOfSeq(701)]!, swapped[indexOfSeq(700)]!];
    await expectFails("swapped.jsonl", swapped, 700, "order");
    const forged = [...lines];
    forged[forged.length - 1] = JSON.stringify({ checkpoint: { ...checkpoint, at: "2030-01-01T00:00:00.000Z" } });
    await expectFails("forged.jsonl", forged, checkpoint.seq, "signature");
  });

  it("the checkpoint's R2 object is the export from seq 1 to it, byte for byte", async () => {
    const pad = (n: number) => String(n).padStart(12, "0");
    const key = `audit/${checkpoint.at.slice(0, 4)}/${checkpoint.at.slice(5, 7)}/${checkpoint.at.slice(8, 10)}/${pad(1)}-${pad(checkpoint.seq)}.jsonl`;
    const out = join(dir, "r2-object.jsonl");
    await run(
      process.execPath,
      [
        WRANGLER_CLI,
        "r2",
        "object",
        "get",
        `audit-e2e/${key}`,
        "--local",
        "--persist-to",
        server.stateDir,
        "--config",
        configPath,
        "--file",
        out,
      ],
      { cwd: PROJECT_ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" } },
    );
    const object = await readFile(out, "utf8");
    const ranged = await exportFile("ranged.jsonl", `?from_seq=1&to_seq=${checkpoint.seq}`);
    expect(object).toBe(ranged.text);
    expect(object).toBe(exported.text);
  });

  it("a SIGKILL of wrangler and workerd while entries are being appended leaves a chain that still verifies", async () => {
    let appending = true;
    let appended = 0;
    const appender = (async () => {
      while (appending) {
        try {
          const res = await server.api("/api/tokens", {
            method: "POST",
            body: JSON.stringify({ name: `kill-${appended}`, roles: ["viewer"] }),
          });
          if (res.status === 201) appended += 1;
        } catch {
          // The server is being killed.
        }
      }
    })();
    await expect.poll(() => appended, { timeout: 20_000, interval: 10 }).toBeGreaterThan(20);
    const killedAt = appended;
    server = await server.crashAndRestart();
    appending = false;
    await appender;
    // A write wakes the sealer; every entry that reached D1 is sealed after the restart.
    await ok(server.api("/api/tokens", { method: "POST", body: JSON.stringify({ name: "after-restart", roles: ["viewer"] }) }), 201);
    const sealed = await waitAllSealed(checkpoint.seq + killedAt + 1);
    const after = await exportFile("after-kill.jsonl");
    const unsigned = await cli(["audit", "verify", after.path, "--public-key", keyFile]);
    expect(unsigned.code, unsigned.stdout + unsigned.stderr).toBe(3);
    expect(JSON.parse((await cli(["--json", "audit", "verify", after.path, "--public-key", keyFile])).stdout)).toMatchObject({
      ok: true,
      last_seq: sealed,
      unsigned_tail_from: checkpoint.seq + 1,
    });
  });
});
