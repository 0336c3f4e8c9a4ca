// GET /api/health (contract section 22): each dependency's state, and the
// whole as "ok" or "degraded". Logic over injected probes, so it is tested
// without D1, the pool or an MCP server; src/operate/health-route.ts wires
// the real ones. MCP probes (tools/list over the engine's own transport) are
// bounded by MCP_CONNECT_TIMEOUT_MS and their answers cached for
// MCP_PROBE_CACHE_MS per server, so a health check every few seconds never
// becomes a stream of connections to every tool server.
import { z } from "zod";
import { raceDeadline } from "../schedule/deadline";

/** Contract section 22: an MCP probe's answer is reused for 30 s. */
const MCP_PROBE_CACHE_MS = 30_000;

const componentSchema = z.enum(["ok", "degraded", "off"]);
const mcpStateSchema = z.enum(["ok", "unreachable", "authorization_required"]);

export const healthSchema = z
  .object({
    status: z.enum(["ok", "degraded"]),
    d1: componentSchema,
    storage_pool: componentSchema,
    config: z.enum(["ok", "bad"]),
    slack: componentSchema,
    // Contract sections 22 and 25: the audit chain; `unsigned` does not degrade the status.
    audit: z.enum(["ok", "degraded", "unsigned"]),
    // Contract sections 22 and 26: degraded when an endpoint is disabled or a delivery has failed for over an hour.
    webhooks: componentSchema,
    mcp: z.record(z.string(), mcpStateSchema),
    // Contract sections 22 and 23: how many halts are active; only informs (never degrades the status).
    halts_active: z.number().int().nonnegative().optional(),
    // Contract section 24: the active policy version; `bad` (it no longer validates) degrades the status.
    policy: z
      .object({ version: z.number().int().min(0), hash: z.string(), state: z.enum(["ok", "bad"]) })
      .strict()
      .optional(),
  })
  .strict()
  .meta({ id: "Health", description: "Each dependency's state (contract section 22): 200 when ok, 503 when degraded." });

export type Health = z.output<typeof healthSchema>;
export type Component = z.output<typeof componentSchema>;
export type McpState = z.output<typeof mcpStateSchema>;

export interface HealthProbes {
  /** False when the host configuration is invalid (bad_config): nothing that needs it is probed. */
  configOk: boolean;
  d1: () => Promise<Component>;
  storagePool: () => Promise<Component>;
  slack: () => Promise<Component>;
  audit: () => Promise<"ok" | "degraded" | "unsigned">;
  /** Absent: "off" (no WEBHOOKS). */
  webhooks?: () => Promise<Component>;
  /** Server name → its probe (already cached and bounded). */
  mcp: Record<string, () => Promise<McpState>>;
  /** Active halts (contract section 23); a failed read leaves `halts_active` out. */
  haltsActive?: () => Promise<number>;
  /** The active policy version (contract section 24); a failed read leaves `policy` out. */
  policy?: () => Promise<NonNullable<Health["policy"]>>;
}

/** Runs every probe at once; a probe that throws counts as degraded (or unreachable). */
export async function checkHealth(probes: HealthProbes): Promise<Health> {
  const safely = <T>(probe: () => Promise<T>, failed: T) => probe().catch(() => failed);
  const names = Object.keys(probes.mcp);
  const haltsActive = probes.haltsActive ? safely(probes.haltsActive, null) : Promise.resolve(null);
  const [d1, storage_pool, slack, audit, webhooks, ...mcpStates] = await Promise.all([
    safely(probes.d1, "degraded" as Component),
    safely(probes.storagePool, "degraded" as Component),
    safely(probes.slack, "degraded" as Component),
    safely(probes.audit, "degraded" as const),
    probes.webhooks ? safely(probes.webhooks, "degraded" as Component) : ("off" as Component),
    ...names.map((name) => safely(probes.mcp[name] as () => Promise<McpState>, "unreachable" as McpState)),
  ]);
  const mcp = Object.fromEntries(names.map((name, i) => [name, mcpStates[i] as McpState]));
  const halts = await haltsActive;
  const policy = probes.policy ? await safely(probes.policy, null) : null;
  const degraded =
    !probes.configOk ||
    policy?.state === "bad" ||
    [d1, storage_pool, slack, audit, webhooks].some((c) => c === "degraded") ||
    Object.values(mcp).some((state) => state !== "ok");
  return {
    status: degraded ? "degraded" : "ok",
    d1: d1 as Component,
    storage_pool: storage_pool as Component,
    config: probes.configOk ? "ok" : "bad",
    slack: slack as Component,
    audit: audit as Health["audit"],
    webhooks: webhooks as Component,
    mcp,
    ...(halts === null ? {} : { halts_active: halts }),
    ...(policy === null ? {} : { policy }),
  };
}

/** Resolves to `fallback` if `work` has not settled within `ms` (the late result is dropped, never unhandled). */
export function within<T>(ms: number, work: Promise<T>, fallback: T): Promise<T> {
  return raceDeadline(
    ms,
    work.catch(() => fallback),
    () => fallback,
  );
}

interface CachedProbe {
  key: string;
  at: number;
  state: Promise<McpState>;
}

/**
 * Per-isolate cache of MCP probe answers: one probe per server per
 * MCP_PROBE_CACHE_MS, shared by concurrent health checks (the promise is
 * cached, so two checks at once make one connection). `key` identifies the
 * server's configuration, so a changed URL is probed afresh.
 */
export class McpProbeCache {
  readonly #entries = new Map<string, CachedProbe>();
  readonly #ttlMs: number;

  constructor(ttlMs = MCP_PROBE_CACHE_MS) {
    this.#ttlMs = ttlMs;
  }

  get(name: string, key: string, now: number, probe: () => Promise<McpState>): Promise<McpState> {
    const hit = this.#entries.get(name);
    if (hit && hit.key === key && now - hit.at < this.#ttlMs) return hit.state;
    const state = probe().catch((): McpState => "unreachable");
    this.#entries.set(name, { key, at: now, state });
    return state;
  }
}
