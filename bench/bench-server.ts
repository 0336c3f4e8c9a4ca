// Serves the bench Worker (bench/wrangler.bench.toml) with `wrangler dev` on a
// free loopback port, like test/support/worker-server.ts does for the real
// Worker, plus what the benchmark needs on top:
//  - a snapshot: the Worker is bundled once per benchmark (`wrangler deploy
//    --dry-run`) and every server serves that bundle with `--no-bundle`.
//    `wrangler dev` always watches its sources and reloads when a file in
//    src/ is saved; a reload mid-measurement orphans every open stream (probes
//    are lost, figures are junk), and a later server could run other code;
//  - the process tree, to read the workerd processes' memory and CPU time, and
//    the runtime's own socket, to measure without wrangler dev's proxy hop;
//  - a bounded, group-wide stop, with a last-resort kill when Node exits.
// It reuses the harness's port finder and wrangler path; the startup logic is
// copied because the harness has no config-path or no-bundle option.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, PROJECT_ROOT, WRANGLER_CLI } from "../test/support/worker-server";

const run = promisify(execFile);

/** Relative to the project root, where wrangler runs. */
export const BENCH_CONFIG = "bench/wrangler.bench.toml";
/** What `wrangler deploy --dry-run --outdir` names the bundle of bench/bench-worker.ts. */
const BUNDLE_ENTRY = "bench-worker.js";
/** wrangler dev normally starts in 5-10 s here. */
const STARTUP_TIMEOUT_MS = 60_000;
const STARTUP_POLL_MS = 100;
/** After SIGTERM, how long wrangler and workerd get before SIGKILL. */
const STOP_GRACE_MS = 5_000;
/** One /healthz probe (startup polling, looking for the runtime's socket). */
const PROBE_TIMEOUT_MS = 1_000;

const CHILD_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" };

export interface BenchBundle {
  /** The bundled bench Worker, an absolute path. */
  entry: string;
  dispose(): Promise<void>;
}

export interface BenchServer {
  url: string;
  token: string;
  /** The wrangler (node) process; its workerd children serve the requests. */
  process: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

export interface ProcessInfo {
  pid: number;
  /** argv joined with spaces. */
  command: string;
  rssKiB: number;
}

/** Servers not stopped yet, with their temp dirs: killed and removed if Node exits first. */
const live = new Map<ChildProcess, string>();
process.once("exit", () => {
  for (const [child, dir] of live) {
    signalGroup(child, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Bundles bench/bench-worker.ts (and the engine it imports) as the working tree has it now. */
export async function buildBenchBundle(): Promise<BenchBundle> {
  const dir = await mkdtemp(join(tmpdir(), "aee-bench-bundle-"));
  try {
    await run(process.execPath, [WRANGLER_CLI, "deploy", "--dry-run", "--outdir", dir, "--config", BENCH_CONFIG], {
      cwd: PROJECT_ROOT,
      env: CHILD_ENV,
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    const output = err as { stdout?: string; stderr?: string };
    throw new Error(`bundling the bench Worker failed:\n${output.stdout ?? ""}${output.stderr ?? ""}`, { cause: err });
  }
  return { entry: join(dir, BUNDLE_ENTRY), dispose: () => rm(dir, { recursive: true, force: true }) };
}

export async function startBenchServer(bundle: BenchBundle, vars: Record<string, string> = {}): Promise<BenchServer> {
  const dir = await mkdtemp(join(tmpdir(), "aee-bench-"));
  const persistTo = join(dir, "state");
  const envFile = join(dir, "bench.env");
  const token = `bench-${Math.random().toString(36).slice(2)}`;
  const allVars = { API_TOKEN: token, ...vars };
  await writeFile(envFile, Object.entries(allVars).map(([k, v]) => `${k}=${v}`).join("\n") + "\n");

  try {
    await run(
      process.execPath,
      [WRANGLER_CLI, "d1", "migrations", "apply", "DB", "--local", "--config", BENCH_CONFIG, "--persist-to", persistTo],
      { cwd: PROJECT_ROOT, env: CHILD_ENV },
    );
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    const output = err as { stdout?: string; stderr?: string };
    throw new Error(`applying D1 migrations failed:\n${output.stdout ?? ""}${output.stderr ?? ""}`, { cause: err });
  }

  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      WRANGLER_CLI, "dev", bundle.entry,
      "--no-bundle",
      "--config", BENCH_CONFIG,
      "--ip", "127.0.0.1",
      "--port", String(port),
      "--inspector-port", String(await freePort()),
      "--persist-to", persistTo,
      "--env-file", envFile,
      "--show-interactive-dev-session=false",
      "--log-level", "warn",
    ],
    // Own process group, so stop() reaches workerd too.
    { cwd: PROJECT_ROOT, env: CHILD_ENV, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  live.set(child, dir);
  let output = "";
  child.stdout?.on("data", (d) => (output += String(d)));
  child.stderr?.on("data", (d) => (output += String(d)));

  const stop = async (): Promise<void> => {
    await stopGroup(child);
    live.delete(child);
    await rm(dir, { recursive: true, force: true });
  };

  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > STARTUP_TIMEOUT_MS) {
      await stop();
      throw new Error(`wrangler dev did not answer /healthz within ${STARTUP_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, STARTUP_POLL_MS));
  }

  return { url, token, process: child, logs: () => output, stop };
}

/** Signals wrangler's whole process group: wrangler, workerd, esbuild. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  signalGroup(child, "SIGTERM");
  const timer = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), STOP_GRACE_MS).unref());
  if ((await Promise.race([exited, timer])) === "timeout") {
    signalGroup(child, "SIGKILL");
    await exited;
  }
}

/** Every descendant of `rootPid` (not the root), found from /proc/<pid>/stat parent ids. */
export async function descendants(rootPid: number): Promise<ProcessInfo[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      // Field 2 (comm) may contain spaces and parentheses; ppid is the 2nd field after its last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // exited while we looked
    }
  }
  const found = new Set<number>([rootPid]);
  // Each pass adds one more generation; process trees here are 2-3 deep.
  for (let changed = true; changed; ) {
    changed = false;
    for (const [pid, ppid] of parents) {
      if (!found.has(pid) && found.has(ppid)) {
        found.add(pid);
        changed = true;
      }
    }
  }
  found.delete(rootPid);
  const infos: ProcessInfo[] = [];
  for (const pid of found) {
    try {
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      const rss = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").join(" ").trim();
      infos.push({ pid, command: cmdline, rssKiB: rss ? Number(rss[1]) : 0 });
    } catch {
      // exited while we looked
    }
  }
  return infos.sort((a, b) => a.pid - b.pid);
}

/** True for the workerd that owns `server`'s public port: wrangler dev's proxy. */
export function isProxyProcess(server: BenchServer, p: ProcessInfo): boolean {
  return p.command.includes(`entry=127.0.0.1:${new URL(server.url).port}`);
}

/**
 * The URL of the worker runtime's own entry socket, the one wrangler dev's
 * proxy forwards to, so a measurement can leave the proxy hop out. workerd
 * binds it to an ephemeral port and wrangler does not print it, so it is
 * found among that process's listening loopback sockets (/proc/<pid>/fd →
 * socket inodes → /proc/net/tcp) and confirmed by GET /healthz. Undefined if
 * none answers.
 */
export async function findRuntimeUrl(server: BenchServer): Promise<string | undefined> {
  const runtime = (await descendants(server.process.pid!)).find(
    (p) => /\bworkerd\b/.test(p.command) && !isProxyProcess(server, p),
  );
  if (!runtime) return undefined;
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${runtime.pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${runtime.pid}/fd/${fd}`))?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed while we looked
    }
  }
  const LISTEN = "0A";
  const LOOPBACK_HEX = "0100007F"; // 127.0.0.1, little-endian hex as /proc/net/tcp writes it
  const ports = (await readFile("/proc/net/tcp", "utf8"))
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[3] === LISTEN && inodes.has(f[9] ?? "") && f[1]?.startsWith(`${LOOPBACK_HEX}:`))
    .map((f) => parseInt(f[1]!.split(":")[1]!, 16));
  for (const port of ports) {
    const url = `http://127.0.0.1:${port}`;
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      if (res.ok && ((await res.json()) as { status?: string }).status === "ok") return url;
    } catch {
      // the inspector or another internal socket
    }
  }
  return undefined;
}

/**
 * CPU time the process has run so far, ns, summed over its threads (the first
 * field of /proc/<pid>/task/<tid>/schedstat). Nanosecond resolution, unlike
 * /proc/<pid>/stat's clock ticks, so one probe's cost is visible. Synchronous
 * and cheap (tens of µs for workerd's threads); callers read it outside timed
 * sections.
 */
export function cpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // the thread exited while we looked
    }
  }
  return total;
}
