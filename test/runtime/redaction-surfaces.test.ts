// Redaction where the text enters (contract section 20), in workerd against
// the real D1 and the real demo MCP server: a run whose assistant text, whose
// human__ask question (a string, and pair shapes written in text) and whose
// tool arguments (every pair shape) carry one sample of every secret rule of
// test/fixtures/secret-samples.ts, and whose echo tool result hands them back
// as its summary. None comes out in the event stream, the summary, the
// listings (/api/inputs, /api/runs) or any D1 row.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { REDACTED } from "../../src/execution/redaction";
import { NAMED_SAMPLES, NAMED_TEXT_SAMPLES, piecesOf, SAMPLE_SECRETS, SECRET_SAMPLES } from "../fixtures/secret-samples";
import { api, sleep, trigger } from "./helpers";

const WAIT_MS = 10_000;
const planted = [...SAMPLE_SECRETS, ...NAMED_SAMPLES.map((s) => s.secret), ...NAMED_TEXT_SAMPLES.map((s) => s.secret)];
// Numbered, not named by rule: a rule id can hold a piece of its own sample (gitleaks:aws-amazon-bedrock-api-key-…).
const allText = SECRET_SAMPLES.map((s, i) => `sample ${i}: ${s.value}`).join("\n");

function leaks(surface: string, text: string): string[] {
  const found: string[] = [];
  for (const secret of planted) {
    for (const piece of piecesOf(secret)) {
      const at = text.indexOf(piece);
      if (at !== -1) {
        found.push(`${surface}: …${text.slice(Math.max(0, at - 80), at + piece.length)}`);
        break;
      }
    }
  }
  return found;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("a secret of every rule, planted in every field a model or tool writes", () => {
  it("comes out of no event, summary, listing or D1 row", async () => {
    const question = [allText, ...NAMED_TEXT_SAMPLES.map((s) => s.text)].join("\n");
    const echoArgs = Object.fromEntries([
      ...NAMED_SAMPLES.map((s, i) => [`field_${i}`, s.value] as const),
      ["samples", SECRET_SAMPLES.map((s) => s.value)],
      ["note", NAMED_TEXT_SAMPLES.map((s) => s.text).join(" ")],
    ]);
    const { status, json } = await trigger({
      message: "redaction surfaces",
      script: [
        { text: allText },
        { tool_calls: [{ tool_name: "human__ask", tool_call_id: "ask-1", arguments: { question } }] },
        { tool_calls: [{ tool_name: "mcp__demo__echo", tool_call_id: "echo-1", arguments: echoArgs }] },
        { text: `final: ${allText}` },
      ],
    });
    expect(status).toBe(202);
    const runId = json.run_id as string;

    const found: string[] = [];
    // While the question waits: the summary and the D1-backed listing of questions.
    const pending = await until("the question in /api/inputs", async () => {
      const text = await (await api("/api/inputs?status=pending")).text();
      return text.includes(runId) ? text : undefined;
    });
    expect(pending).toContain(REDACTED);
    found.push(...leaks("/api/inputs", pending));
    found.push(...leaks("the summary (pending)", await (await api(`/api/runs/${runId}`)).text()));

    const answered = await api(`/api/runs/${runId}/inputs/ask-1`, {
      method: "POST",
      body: JSON.stringify({ answer: "ok" }),
    });
    expect(answered.status).toBeLessThan(300);
    const summary = await until("the run's end", async () => {
      const text = await (await api(`/api/runs/${runId}`)).text();
      return JSON.parse(text).status === "running" ? undefined : text;
    });
    expect(JSON.parse(summary).status).toBe("completed");
    found.push(...leaks("the summary", summary));

    const stream = await (await api(`/api/runs/${runId}/events`)).text();
    for (const type of ["assistant_message", "human_input_requested", "tool_execution", "run_completed"])
      expect(stream).toContain(`event: ${type}`);
    found.push(...leaks("the event stream", stream));
    found.push(...leaks("/api/runs", await (await api("/api/runs")).text()));

    const tables = await env.DB.prepare(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'`,
    ).all<{ name: string }>();
    expect(tables.results.length).toBeGreaterThan(0);
    for (const { name } of tables.results) {
      const rows = await env.DB.prepare(`SELECT * FROM "${name}"`).all();
      found.push(...leaks(`D1 table ${name}`, JSON.stringify(rows.results)));
    }
    expect(found).toEqual([]);
  });
});
