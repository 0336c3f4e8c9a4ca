// Mutation limits' settings and pure rules (contract section 23): a bad
// `limits` entry is bad_config naming it; MUTATION_RETENTION_DAYS shorter
// than a limit's `per` is bad_config; a tool's own limits and those of "*"
// add up; HALT_RELEASE_APPROVALS is 1..5; the retry hint is
// ceil(oldest + per - now).
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config";
import { limitsFor, retryAfterSeconds } from "../../src/policy/mutation-limits";

const TOKEN = "t".repeat(32);
const paths = (vars: Record<string, string>) => {
  const result = parseConfig({ API_TOKEN: TOKEN, ...vars });
  return result.state === "bad_config" ? result.details.map((d) => d.path) : result.state;
};

describe("limits in TOOL_POLICY", () => {
  it("accepts limits on a tool and on *", () => {
    expect(
      paths({
        TOOL_POLICY: JSON.stringify({
          mcp__demo__create_dashboard: { limits: [{ max: 3, per: "1h", by: "principal" }] },
          "*": {
            limits: [
              { max: 10000, per: "30d", by: "all" },
              { max: 1, per: "30s", by: "channel" },
            ],
          },
        }),
      }),
    ).toBe("ready");
  });

  it("names the entry of a bad limit", () => {
    const bad: [unknown, string][] = [
      [{ max: 0, per: "1h", by: "all" }, "max"],
      [{ max: 10001, per: "1h", by: "all" }, "max"],
      [{ max: 1.5, per: "1h", by: "all" }, "max"],
      [{ max: 1, per: "29s", by: "all" }, "per"],
      [{ max: 1, per: "31d", by: "all" }, "per"],
      [{ max: 1, per: "1w", by: "all" }, "per"],
      [{ max: 1, per: "0h", by: "all" }, "per"],
      [{ max: 1, per: "h", by: "all" }, "per"],
      [{ max: 1, per: "1h", by: "team" }, "by"],
      [{ max: 1, per: "1h", by: "all", extra: true }, ""],
    ];
    for (const [limit, field] of bad) {
      const got = paths({ TOOL_POLICY: JSON.stringify({ mcp__demo__create_dashboard: { limits: [limit] } }) });
      expect(got, JSON.stringify(limit)).toEqual([expect.stringContaining("TOOL_POLICY.mcp__demo__create_dashboard.limits.0")]);
      if (field !== "") expect((got as string[])[0]).toContain(field);
    }
  });

  it("refuses a MUTATION_RETENTION_DAYS shorter than a limit's per, naming the limit", () => {
    const policy = JSON.stringify({ "*": { limits: [{ max: 5, per: "2d", by: "all" }] } });
    expect(paths({ TOOL_POLICY: policy, MUTATION_RETENTION_DAYS: "1" })).toEqual(["TOOL_POLICY.*.limits.0.per"]);
    expect(paths({ TOOL_POLICY: policy, MUTATION_RETENTION_DAYS: "2" })).toBe("ready");
  });

  it("HALT_RELEASE_APPROVALS is 1..5", () => {
    expect(paths({ HALT_RELEASE_APPROVALS: "0" })).toEqual(["HALT_RELEASE_APPROVALS"]);
    expect(paths({ HALT_RELEASE_APPROVALS: "6" })).toEqual(["HALT_RELEASE_APPROVALS"]);
    expect(paths({ HALT_RELEASE_APPROVALS: "5" })).toBe("ready");
  });

  it("a tool's own limits and those of * add up, * counting every tool", () => {
    const policy = {
      mcp__a__x: { limits: [{ max: 3, per: "1h", by: "principal" as const }] },
      "*": { limits: [{ max: 10, per: "1m", by: "all" as const }] },
    };
    expect(limitsFor(policy, "mcp__a__x")).toEqual([
      { max: 3, per_s: 3600, by: "principal", tool: "mcp__a__x" },
      { max: 10, per_s: 60, by: "all", tool: null },
    ]);
    expect(limitsFor(policy, "mcp__a__y")).toEqual([{ max: 10, per_s: 60, by: "all", tool: null }]);
    expect(limitsFor({}, "mcp__a__y")).toEqual([]);
  });

  it("retry_after_s is ceil(oldest counted dispatched_at + per - now)", () => {
    const now = Date.parse("2026-12-01T10:00:00.000Z");
    expect(retryAfterSeconds("2026-12-01T09:30:00.000Z", 3600, now)).toBe(1800);
    expect(retryAfterSeconds("2026-12-01T09:00:00.500Z", 3600, now)).toBe(1);
    expect(retryAfterSeconds("2026-12-01T08:00:00.000Z", 3600, now)).toBe(0);
  });
});
