// `npm start` with a busy port (issue 9, finding 5): it must stop before
// starting anything, exit non-zero, name the busy port and how to choose
// others, and print no token. The script runs as a real process
// (tsx scripts/start.ts); a real socket holds the port.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoMcpUrl, newDevVars, withDemoPort, withLongEnoughToken } from "../../scripts/dev-vars";
import { freePort, PROJECT_ROOT } from "../support/worker-server";

const TSX_CLI = join(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
/** The script exits within a second or two when a port is busy; this only bounds a hang. */
const EXIT_TIMEOUT_MS = 30_000;

const held: Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function holdPort(): Promise<number> {
  const server = createServer();
  held.push(server);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}

function runStart(vars: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, join(PROJECT_ROOT, "scripts/start.ts")], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...vars },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += String(d)));
    child.stderr.on("data", (d) => (output += String(d)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`npm start did not exit within ${EXIT_TIMEOUT_MS} ms:\n${output}`));
    }, EXIT_TIMEOUT_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** No token, from .dev.vars or newly made, in the output. */
function expectNoToken(output: string): void {
  expect(output).not.toMatch(/API token|TOKEN=|Bearer|local-[A-Za-z0-9_-]{10,}/);
  const devVars = join(PROJECT_ROOT, ".dev.vars");
  const token = existsSync(devVars) ? /^API_TOKEN=(.+)$/m.exec(readFileSync(devVars, "utf8"))?.[1]?.trim() : undefined;
  if (token) expect(output).not.toContain(token);
}

describe("npm start with a busy port", () => {
  it("exits non-zero naming the Worker's busy port and how to choose others, with no token", async () => {
    const busy = await holdPort();
    const { code, output } = await runStart({ PORT: String(busy), DEMO_MCP_PORT: String(await freePort()) });
    expect(code).not.toBe(0);
    expect(output).toContain(`127.0.0.1:${busy} for PORT`);
    expect(output).toMatch(/PORT=\d+ DEMO_MCP_PORT=\d+ npm start/);
    expect(output).not.toMatch(/serving/i);
    expectNoToken(output);
  });

  it("exits non-zero naming the demo server's busy port", async () => {
    const busy = await holdPort();
    const { code, output } = await runStart({ PORT: String(await freePort()), DEMO_MCP_PORT: String(busy) });
    expect(code).not.toBe(0);
    expect(output).toContain(`127.0.0.1:${busy} for DEMO_MCP_PORT`);
    expectNoToken(output);
  });
});

describe(".dev.vars follows the ports in use", () => {
  it("points the demo server's URL at DEMO_MCP_PORT and leaves everything else", () => {
    const first = newDevVars("local-x", 3001);
    const moved = withDemoPort(first, 4555);
    expect(moved).toContain(demoMcpUrl(4555));
    expect(moved).not.toContain(demoMcpUrl(3001));
    expect(moved.replace(demoMcpUrl(4555), demoMcpUrl(3001))).toBe(first);
    expect(withDemoPort(moved, 4555)).toBe(moved);
    // A developer's own servers and a non-loopback demo URL are not touched.
    const custom = `API_TOKEN=t\nMCP_SERVERS='{"demo":{"url":"https://demo.example/mcp"},"ops":{"url":"http://127.0.0.1:9/mcp"}}'\n`;
    expect(withDemoPort(custom, 4555)).toBe(custom);
  });
});

describe(".dev.vars keeps npm start working when tokens must be 32 characters (contract section 18)", () => {
  it("replaces a shorter API_TOKEN, an old start's, and leaves a long one and every other line", () => {
    const fresh = `local-${"x".repeat(43)}`;
    const old = newDevVars("local-abcdefghijklmnopqrstuvwx", 3001); // 30 characters, as earlier starts wrote
    const upgraded = withLongEnoughToken(old, fresh);
    expect(upgraded).toContain(`API_TOKEN=${fresh}\n`);
    expect(upgraded.replace(fresh, "local-abcdefghijklmnopqrstuvwx")).toBe(old);
    const long = newDevVars(fresh, 3001);
    expect(withLongEnoughToken(long, "other")).toBe(long);
    expect(withLongEnoughToken("MCP_SERVERS='{}'\n", fresh)).toBe("MCP_SERVERS='{}'\n");
  });
});
