// What the benchmark reads about a `wrangler dev` server from /proc (Linux
// only): its process tree, the workerd processes' memory and CPU time, and
// the worker runtime's own entry socket, to measure without wrangler dev's
// proxy hop. The server itself comes from test/support/worker-server.ts.
import { readdirSync, readFileSync } from "node:fs";
import { readdir, readFile, readlink } from "node:fs/promises";

/** One /healthz probe while looking for the runtime's socket. */
const PROBE_TIMEOUT_MS = 1_000;

/** What these helpers need of a server: its public URL and the wrangler process. */
export interface ServedWorker {
  url: string;
  process: { pid?: number | undefined };
}

export interface ProcessInfo {
  pid: number;
  /** argv joined with spaces. */
  command: string;
  rssKiB: number;
}

/** Every descendant of `rootPid` (not the root), found from /proc/<pid>/stat parent ids. */
async function descendants(rootPid: number): Promise<ProcessInfo[]> {
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

/** The server's workerd processes: wrangler dev's proxy and the worker runtime. */
export async function workerdProcesses(server: ServedWorker): Promise<ProcessInfo[]> {
  if (server.process.pid === undefined) return [];
  return (await descendants(server.process.pid)).filter((p) => /\bworkerd\b/.test(p.command));
}

/** True for the workerd that owns `server`'s public port: wrangler dev's proxy. */
export function isProxyProcess(server: ServedWorker, p: ProcessInfo): boolean {
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
export async function findRuntimeUrl(server: ServedWorker): Promise<string | undefined> {
  const runtime = (await workerdProcesses(server)).find((p) => !isProxyProcess(server, p));
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
