// The logic of GET /api/health (contract section 22) over stand-in probes:
// the overall status, a probe that throws, the bound on a probe that never
// answers, and the 30 s MCP probe cache (shared by concurrent checks, renewed
// after its time and for a changed server).
import { describe, expect, it } from "vitest";
import { checkHealth, type HealthProbes, McpProbeCache, type McpState, within } from "../../src/operate/health";

/** Contract section 22: MCP probes are cached 30 s. */
const PROBE_CACHE_MS = 30_000;

const probes = (overrides: Partial<HealthProbes> = {}): HealthProbes => ({
  configOk: true,
  d1: async () => "ok",
  storagePool: async () => "ok",
  slack: async () => "off",
  audit: async () => "unsigned",
  mcp: { demo: async () => "ok" },
  ...overrides,
});

describe("checkHealth", () => {
  it("audit: unsigned does not degrade the status, degraded does (contract sections 22 and 25)", async () => {
    expect(await checkHealth(probes({ audit: async () => "unsigned" }))).toMatchObject({ status: "ok", audit: "unsigned" });
    expect(await checkHealth(probes({ audit: async () => "degraded" }))).toMatchObject({ status: "degraded", audit: "degraded" });
    expect(await checkHealth(probes({ audit: async () => Promise.reject(new Error("D1 down")) }))).toMatchObject({
      status: "degraded",
      audit: "degraded",
    });
  });

  it("is ok when every component is ok or off and every MCP server ok", async () => {
    expect(await checkHealth(probes())).toEqual({
      status: "ok",
      d1: "ok",
      storage_pool: "ok",
      config: "ok",
      slack: "off",
      audit: "unsigned",
      webhooks: "off",
      mcp: { demo: "ok" },
    });
  });

  it("webhooks: off without a probe, degraded when its probe says so or throws (contract sections 22 and 26)", async () => {
    expect(await checkHealth(probes({ webhooks: async () => "ok" }))).toMatchObject({ status: "ok", webhooks: "ok" });
    expect(await checkHealth(probes({ webhooks: async () => "degraded" }))).toMatchObject({ status: "degraded", webhooks: "degraded" });
    expect(await checkHealth(probes({ webhooks: async () => Promise.reject(new Error("D1 down")) }))).toMatchObject({
      status: "degraded",
      webhooks: "degraded",
    });
  });

  it("is degraded by any degraded component, any MCP server not ok, or a bad configuration", async () => {
    expect((await checkHealth(probes({ d1: async () => "degraded" }))).status).toBe("degraded");
    expect((await checkHealth(probes({ slack: async () => "degraded" }))).status).toBe("degraded");
    expect((await checkHealth(probes({ mcp: { a: async () => "ok", b: async () => "authorization_required" } }))).status).toBe("degraded");
    const bad = await checkHealth(probes({ configOk: false }));
    expect(bad).toMatchObject({ status: "degraded", config: "bad" });
  });

  it("counts a probe that throws as degraded (unreachable for MCP)", async () => {
    const fail = async (): Promise<never> => {
      throw new Error("boom");
    };
    const health = await checkHealth(probes({ storagePool: fail, mcp: { demo: fail } }));
    expect(health).toMatchObject({ status: "degraded", storage_pool: "degraded", mcp: { demo: "unreachable" } });
  });
});

describe("within", () => {
  it("answers the fallback when the work does not settle in time, and the work's answer when it does", async () => {
    expect(await within(20, new Promise<string>(() => {}), "late")).toBe("late");
    expect(await within(1_000, Promise.resolve("ok"), "late")).toBe("ok");
    expect(await within(1_000, Promise.reject(new Error("x")), "failed")).toBe("failed");
  });
});

describe("McpProbeCache", () => {
  it("probes a server once per cache period, shared by concurrent checks, and again after it or for a changed server", async () => {
    const cache = new McpProbeCache();
    let probes = 0;
    const probe = async (): Promise<McpState> => {
      probes += 1;
      return probes === 1 ? "unreachable" : "ok";
    };
    const t0 = 1_000_000;
    const [a, b] = await Promise.all([cache.get("demo", "k", t0, probe), cache.get("demo", "k", t0, probe)]);
    expect([a, b, probes]).toEqual(["unreachable", "unreachable", 1]);
    expect(await cache.get("demo", "k", t0 + PROBE_CACHE_MS - 1, probe)).toBe("unreachable");
    expect(probes).toBe(1);
    expect(await cache.get("demo", "k", t0 + PROBE_CACHE_MS, probe)).toBe("ok");
    expect(probes).toBe(2);
    expect(await cache.get("demo", "changed-url", t0 + PROBE_CACHE_MS, probe)).toBe("ok");
    expect(probes).toBe(3);
  });
});
