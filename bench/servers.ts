// The processes the benchmark starts and how it stops them: one bundle of the
// bench Worker, a fresh `wrangler dev` per phase group (withServer), the demo
// MCP server, and a shutdown that stops them all (also on Ctrl-C and past the
// deadline).
import { startDemoMcpProcess, type DemoMcpProcess } from "../test/support/demo-mcp-process";
import {
  buildWorkerBundle,
  startWorkerServer,
  type WorkerBundle,
  type WorkerServer,
  type WorkerServerOptions,
} from "../test/support/worker-server";
import { Client, type CpuSample, destroyAgents, log } from "./http-client";
import { cpuNs, findRuntimeUrl, isProxyProcess, workerdProcesses } from "./processes";

/** The bench Worker's wrangler config, relative to the project root (where wrangler runs). */
const BENCH_CONFIG = "bench/wrangler.bench.toml";

const servers = new Set<WorkerServer>();
let bundle: WorkerBundle | undefined;
let demo: DemoMcpProcess | undefined;
let stopping: Promise<void> | undefined;

/** Bundles the bench Worker once; every server of the run serves this bundle. */
export async function buildBenchBundle(): Promise<void> {
  log("bundling bench/bench-worker.ts (the engine as the working tree has it now) ...");
  bundle = await buildWorkerBundle(BENCH_CONFIG);
}

/** Starts the demo MCP server (stopped by shutdown). */
export async function startDemo(): Promise<DemoMcpProcess> {
  log("starting the demo MCP server ...");
  demo = await startDemoMcpProcess();
  return demo;
}

/** A fresh server on the benchmark's one bundle, with `vars` on top of the bench config's, stopped whatever `fn` does. */
export async function withServer<T>(
  fn: (server: WorkerServer, client: Client, direct: Client | undefined) => Promise<T>,
  vars: Record<string, string> = {},
  options: Pick<WorkerServerOptions, "port"> = {},
): Promise<T> {
  if (!bundle) throw new Error("no bundle: call buildBenchBundle() first");
  log("starting wrangler dev ...");
  const server = await startWorkerServer(vars, { ...options, bundle });
  servers.add(server);
  try {
    const runtimeUrl = await findRuntimeUrl(server);
    log(`serving on ${server.url} (runtime ${runtimeUrl ?? "not found"})`);
    const workerds = await workerdProcesses(server);
    const proxyPid = workerds.find((p) => isProxyProcess(server, p))?.pid;
    const runtimePid = workerds.find((p) => !isProxyProcess(server, p))?.pid;
    if (proxyPid === undefined || runtimePid === undefined) throw new Error("could not tell wrangler dev's two workerd processes apart");
    const cpu = (): CpuSample => ({ runtime: cpuNs(runtimePid), proxy: cpuNs(proxyPid) });
    const client = new Client("wrangler dev", server.url, server.token, cpu);
    const direct = runtimeUrl ? new Client("direct", runtimeUrl, server.token, cpu) : undefined;
    return await fn(server, client, direct);
  } catch (err) {
    // A failure while shutting down (Ctrl-C, deadline) is the shutdown's own doing.
    if (!stopping) log(`wrangler output (tail):\n${server.logs().slice(-4_000)}`);
    throw err;
  } finally {
    servers.delete(server);
    await server.stop();
  }
}

export function shutdown(): Promise<void> {
  stopping ??= (async () => {
    destroyAgents();
    await Promise.all([...servers].map((s) => s.stop()));
    await demo?.stop();
    await bundle?.dispose();
  })();
  return stopping;
}
