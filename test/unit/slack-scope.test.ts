// The Slack principal format and team scope (contract sections 18 and 19),
// pure: principal ids, SLACK_APPROVERS entries, the requester of old and new
// runs, which requests are another team's or another organisation's, the
// mention made from a principal, and auth.test asked once per bot token.
import { describe, expect, it } from "vitest";
import { renderPerson } from "../../src/slack/blocks";
import { installationTeam } from "../../src/slack/installation-team";
import { approverPrincipals, slackPrincipal, slackRequester, slackUserOf } from "../../src/slack/slack-principal";
import { eventTeams, interactionTeams, scopeOf } from "../../src/slack/team-scope";

describe("Slack principals", () => {
  it("are slack:<team>:<user>; the user is read back from the new and the pre-principal form only", () => {
    expect(slackPrincipal("T0HOME", "U0ALICE")).toBe("slack:T0HOME:U0ALICE");
    expect(slackUserOf("slack:T0HOME:U0ALICE")).toBe("U0ALICE");
    expect(slackUserOf("slack:E0GRID:W0BOB")).toBe("W0BOB");
    expect(slackUserOf("slack:U0OLD")).toBe("U0OLD");
    for (const other of ["token:root", "access:a@b.c", "slack:alice", "slack:T1:alice", "U0ALICE"]) expect(slackUserOf(other)).toBeNull();
  });

  it("mentions the user of a Slack principal; any other principal is inline code", () => {
    expect(renderPerson("slack:T0HOME:U0ALICE")).toBe("<@U0ALICE>");
    expect(renderPerson("slack:U0OLD")).toBe("<@U0OLD>");
    expect(renderPerson("token:root")).toBe("`token:root`");
  });

  it("SLACK_APPROVERS: U… is a user of the installation's team, <team>:<user> as written", () => {
    expect(approverPrincipals(["U0A", "T0OTHER:U0B", "E0GRID:W0C"], "T0HOME")).toEqual([
      "slack:T0HOME:U0A",
      "slack:T0OTHER:U0B",
      "slack:E0GRID:W0C",
    ]);
  });

  it("a run's Slack requester: requested_by when it is a Slack principal; a pre-principal run's user_id is of the installation's team", () => {
    expect(slackRequester({ requested_by: "slack:T0HOME:U0A", user_id: "U0A" }, "T0HOME")).toBe("slack:T0HOME:U0A");
    expect(slackRequester({ requested_by: "token:root", user_id: "U0A" }, "T0HOME")).toBeUndefined();
    expect(slackRequester({ user_id: "U0A" }, "T0HOME")).toBe("slack:T0HOME:U0A");
    expect(slackRequester({ user_id: "alice" }, "T0HOME")).toBeUndefined();
  });
});

describe("team scope", () => {
  const envelope = (fields: Record<string, unknown>, event: Record<string, unknown>) => ({ type: "event_callback", ...fields, event });

  it("events: the envelope's team; the user's team from user_team, else team, else the envelope's team_id", () => {
    expect(eventTeams(envelope({ team_id: "T0HOME" }, { user: "U1" }))).toEqual({ team: "T0HOME", user: { id: "U1", team: "T0HOME" } });
    expect(eventTeams(envelope({ team_id: "T0HOME" }, { user: "U1", team: "T0EXT" })).user?.team).toBe("T0EXT");
    expect(eventTeams(envelope({ team_id: "T0HOME" }, { user: "U1", team: "T0EXT", user_team: "T0EXT2" })).user?.team).toBe("T0EXT2");
    expect(eventTeams(envelope({ team_id: "T0HOME" }, { type: "app_uninstalled" }))).toEqual({ team: "T0HOME" });
  });

  it("events on Enterprise Grid: the team and a workspace of it are mapped to the enterprise id", () => {
    const grid = envelope(
      { team_id: "T0WS1", enterprise_id: "E0GRID", authorizations: [{ team_id: "T0WS2", enterprise_id: "E0GRID" }] },
      { user: "U1", user_team: "T0WS2" },
    );
    expect(eventTeams(grid)).toEqual({ team: "E0GRID", user: { id: "U1", team: "E0GRID" } });
  });

  it("clicks: the enterprise, else the workspace; the user's team is user.team_id", () => {
    expect(interactionTeams({ user: { id: "U1", team_id: "T0HOME" }, team: { id: "T0HOME" } })).toEqual({
      team: "T0HOME",
      user: { id: "U1", team: "T0HOME" },
    });
    expect(interactionTeams({ user: { id: "U1", team_id: "E0GRID" }, team: { id: "T0WS1" }, enterprise: { id: "E0GRID" } })).toEqual({
      team: "E0GRID",
      user: { id: "U1", team: "E0GRID" },
    });
  });

  it("another team is foreign, an external user is refused unless allowed, and an in-scope user gets a principal", () => {
    expect(scopeOf({ team: "T0OTHER", user: { id: "U1", team: "T0OTHER" } }, "T0HOME", true)).toEqual({
      kind: "foreign_team",
      team: "T0OTHER",
    });
    expect(scopeOf({ team: undefined }, "T0HOME", true).kind).toBe("foreign_team");
    const external = { team: "T0HOME", user: { id: "U9", team: "T0EXT" } };
    expect(scopeOf(external, "T0HOME", false)).toEqual({ kind: "external_user", user: "U9", user_team: "T0EXT" });
    expect(scopeOf(external, "T0HOME", true)).toEqual({ kind: "in_scope", principal: "slack:T0EXT:U9" });
    expect(scopeOf({ team: "T0HOME", user: { id: "U1", team: "T0HOME" } }, "T0HOME", false)).toEqual({
      kind: "in_scope",
      principal: "slack:T0HOME:U1",
    });
    expect(scopeOf({ team: "T0HOME" }, "T0HOME", false)).toEqual({ kind: "in_scope", principal: undefined });
  });
});

describe("the installation's team", () => {
  it("is SLACK_TEAM_ID when set, without asking auth.test", async () => {
    let asked = 0;
    const team = await installationTeam({ SLACK_TEAM_ID: "T0SET", SLACK_BOT_TOKEN: "xoxb-set" }, async () => {
      asked++;
      return { team_id: "T0OTHER" };
    });
    expect([team, asked]).toEqual(["T0SET", 0]);
  });

  it("else auth.test's (the enterprise on Grid), asked once per bot token, even by requests arriving together", async () => {
    let asked = 0;
    const authTest = async () => {
      asked++;
      return { team_id: "T0WS1", enterprise_id: "E0GRID" };
    };
    const settings = { SLACK_BOT_TOKEN: `xoxb-once-${Date.now()}` };
    const teams = await Promise.all([installationTeam(settings, authTest), installationTeam(settings, authTest)]);
    expect(await installationTeam(settings, authTest)).toBe("E0GRID");
    expect([teams, asked]).toEqual([["E0GRID", "E0GRID"], 1]);
  });

  it("unknown (null) while auth.test fails or names no team; asked again by the next request", async () => {
    const settings = { SLACK_BOT_TOKEN: `xoxb-fails-${Date.now()}` };
    expect(await installationTeam(settings, async () => Promise.reject(new Error("invalid_auth")))).toBeNull();
    expect(await installationTeam(settings, async () => ({}))).toBeNull();
    expect(await installationTeam(settings, async () => ({ team_id: "T0LATER" }))).toBe("T0LATER");
  });
});
