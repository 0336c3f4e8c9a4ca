// The Slack demo's stand-in page (npm run slack-demo): the app's real posts,
// built by src/slack/blocks.ts, drawn roughly as Slack draws them (issue 29,
// point 16) instead of raw JSON and a pointer to Block Kit Builder, which
// cannot work offline. Every text escaped: a model's markup shows as text.
import { describe, expect, it } from "vitest";
import { approvalRequest, confirmApprovalModal } from "../../src/slack/blocks";
import { mrkdwnHtml, standInPage } from "../support/block-kit-html";

const call = (method: string, params: Record<string, unknown>, seq = 1) => ({
  seq,
  method,
  params,
  at: Date.UTC(2026, 11, 1),
  answered: "ok",
});

describe("the Slack stand-in's page", () => {
  const message = approvalRequest({
    run_id: "run_1",
    approval_id: "approval_1",
    tool_name: "mcp__demo__create_dashboard<script>",
    level: "approve",
    arguments_preview: '{"title":"Latency"}',
    expires_at: "2026-12-01T12:00:00.000Z",
    console_url: "http://127.0.0.1:8787/console#/runs/run_1",
    destructive: true,
  });
  const page = standInPage([call("chat.postMessage", { channel: "CDEMO", ...message })]);

  it("draws an approval post's buttons as buttons, in Slack's colours, and its text with its formatting", () => {
    expect(page).toMatch(/<button class="button primary" disabled>Approve<\/button>/);
    expect(page).toMatch(/<button class="button danger" disabled>Deny<\/button>/);
    expect(page).toMatch(
      /<button class="button" title="opens http:\/\/127\.0\.0\.1:8787\/console#\/runs\/run_1" disabled>Open in the console ↗<\/button>/,
    );
    expect(page).toContain('<div class="block section">');
    expect(page).toContain('<div class="block context">');
    expect(page).toContain("<code>");
    expect(page).toContain("in CDEMO");
  });

  it("escapes what a model or tool wrote: no markup of theirs reaches the page", () => {
    expect(page).not.toContain("<script>");
    expect(page).toContain("&lt;script&gt;");
  });

  it("says what it is, keeps each call's JSON folded beneath, and sends nobody to Block Kit Builder", () => {
    expect(page).toContain("an approximation, not Slack's renderer");
    expect(page).toContain("<details><summary>the call's JSON</summary>");
    expect(page).not.toMatch(/block kit builder/i);
  });

  it("draws a modal's title, inputs and submit button", () => {
    const modal = standInPage([call("views.open", { view: confirmApprovalModal("mcp__demo__delete_dashboard", "{}") })]);
    expect(modal).toContain('<div class="view-title">');
    expect(modal).toContain('<div class="block input"><label>');
    expect(modal).toMatch(/<input disabled/);
    expect(modal).toMatch(/<button class="button primary" disabled>[^<]+<\/button>/);
  });

  it("renders mrkdwn: bold, italic, code, links, mentions, dates by their fallback, code blocks", () => {
    expect(mrkdwnHtml("*Approval* _needed_ `x<y` <https://e.example|docs> <@U123> <!date^1700000000^{date}|1 Dec> &lt;b&gt;")).toBe(
      '<b>Approval</b> <i>needed</i> <code>x&lt;y</code> <a href="https://e.example">docs</a> <span class="mention">@U123</span> 1 Dec &lt;b&gt;',
    );
    expect(mrkdwnHtml('```\n{"a":1}\n```')).toBe("<pre>{&quot;a&quot;:1}</pre>");
  });
});
