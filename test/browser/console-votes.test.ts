// Two-person approvals in the console (contract section 19), in real headless
// Chromium against wrangler dev: the approval form says how many distinct
// persons approved of how many required, names each voter and who may still
// decide, and a credential that is no person (the root token the page signed
// in with) is refused with the policy's reason, changing nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineClient } from "../../src/client";
import { useConsoleSuite } from "../support/browser-session";
import { waitForSummary } from "../support/console-browser";
import { type AccessIssuer, startAccessIssuer } from "../support/jwks-server";

const CREATE = "mcp__demo__create_dashboard";
/** Every wait for the page: long enough for a loaded 2-core machine, never a production default. */
const UI_TIMEOUT_MS = 15_000;

const AUD = "console-votes-aud";
const VOTERS = ["ann@votes.example", "bo@votes.example"];
const pageErrors: Error[] = [];
/** The Worker's settings; Cloudflare Access (a JWKS stand-in) is added once it listens, before the suite's Worker starts. */
const vars: Record<string, string> = { TOOL_POLICY: JSON.stringify({ [CREATE]: { approvals_required: 2 } }) };
let access: AccessIssuer;
beforeAll(async () => {
  access = await startAccessIssuer("k-votes", AUD);
  Object.assign(vars, {
    ACCESS_TEAM_DOMAIN: access.url,
    ACCESS_AUD: AUD,
    ACCESS_ROLES: JSON.stringify(Object.fromEntries(VOTERS.map((email) => [email, ["approver"]]))),
  });
});
afterAll(async () => {
  await access?.stop();
});
const ui = useConsoleSuite({ pageErrors, vars });

/**
 * A client acting as an approver token the Access user `email` minted for themselves: that person (contract
 * section 18; a token an admin made naming an owner proves nothing, so it would not count towards two).
 */
async function approverAs(name: string, email: string): Promise<{ client: EngineClient; principal: string }> {
  const jwt = await access.assertion(email);
  const res = await fetch(`${ui.stack.server.url}/api/tokens`, {
    method: "POST",
    headers: { "cf-access-jwt-assertion": jwt, origin: ui.stack.server.url, "content-type": "application/json" },
    body: JSON.stringify({ name, roles: ["approver"] }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  const { token } = (await res.json()) as { token: string };
  return { client: new EngineClient({ baseUrl: ui.stack.server.url, token }), principal: `token:${name}` };
}

describe("votes in the approval form, in Chromium", () => {
  it("shows 1 of 2 with the voter, refuses the root token's approve, and the second person's vote runs the call", async () => {
    const suffix = Date.now().toString(36);
    const ann = await approverAs(`ann-${suffix}`, "ann@votes.example");
    const bo = await approverAs(`bo-${suffix}`, "bo@votes.example");
    const { run_id: runId } = await ui.engine.trigger({
      message: "two persons",
      script: [{ tool_calls: [{ tool_name: CREATE, tool_call_id: "two-1", arguments: { title: `votes ${suffix}` } }] }, { text: "done" }],
    });
    const [approval] = await waitForSummary(
      ui.engine,
      runId,
      (s) => (s.pending_approvals.length === 1 ? s.pending_approvals : undefined),
      UI_TIMEOUT_MS,
    );
    expect(await ann.client.decideApproval(runId, approval!.approval_id, { decision: "approve" })).toMatchObject({
      status: "pending",
      votes: 1,
      required: 2,
    });

    await ui.page.goto(`${ui.stack.server.url}/console#/runs/${encodeURIComponent(runId)}`);
    const votes = ui.page.locator('[data-tool-call-id="two-1"] p.votes');
    await expect.poll(() => votes.getAttribute("data-votes"), { timeout: UI_TIMEOUT_MS }).toBe("1");
    expect(await votes.getAttribute("data-required")).toBe("2");
    const text = (await votes.textContent()) ?? "";
    expect(text).toContain("1 of 2");
    expect(text).toContain(ann.principal);
    expect(text).toContain("anyone with the approver role");

    // The page's own credential is the root token: no person, so it never counts towards two.
    await ui.page.locator('[data-tool-call-id="two-1"] button[type="submit"]').click();
    const error = ui.page.locator('[data-tool-call-id="two-1"] p.error');
    await error.waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await error.textContent()).toContain("approval policy does not let you decide");
    expect((await ui.engine.summary(runId)).pending_approvals).toHaveLength(1);

    expect(await bo.client.decideApproval(runId, approval!.approval_id, { decision: "approve" })).toMatchObject({
      status: "resolved",
      decision: "approved",
    });
    const ended = await waitForSummary(ui.engine, runId, (s) => (s.status === "completed" ? s : undefined), UI_TIMEOUT_MS);
    expect(ended.status).toBe("completed");
    // The decided card names every person who approved, not only the last, keeps the arguments decided on, and says it ran.
    const card = ui.page.locator('li.card[data-tool-call-id="two-1"]');
    await expect
      .poll(() => card.locator(".outcome[data-outcome]").getAttribute("data-outcome"), { timeout: UI_TIMEOUT_MS })
      .toBe("completed");
    expect(await card.locator("p.meta").innerText()).toContain(`approved by ${ann.principal}, ${bo.principal}`);
    expect(await card.locator("p.votes").innerText()).toContain(`2 of 2 distinct persons approved: ${ann.principal}, ${bo.principal}`);
    expect(await card.locator("figure.json pre").textContent()).toContain(`votes ${suffix}`);
    expect(pageErrors).toEqual([]);
  });
});
