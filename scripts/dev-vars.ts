// The settings `npm start` keeps in .dev.vars, kept consistent with the ports
// of this start: the demo MCP server's URL in MCP_SERVERS follows
// DEMO_MCP_PORT on every start instead of being frozen by the first one. Only
// the `demo` entry on loopback is touched; servers a developer added stay.
// The local secrets the console and MCP OAuth need (CONSOLE_SESSION_SECRET,
// MCP_TOKEN_KEY) and the callback's origin (PUBLIC_URL, on loopback) are
// written with the token the first time, and added, with a line saying so,
// to a file that lacks them; nothing a developer wrote is rewritten.
import { randomBytes } from "node:crypto";

const DEMO_URL = /^http:\/\/127\.0\.0\.1:\d+\/mcp$/;
const LOOPBACK_ORIGIN = /^http:\/\/127\.0\.0\.1:\d+$/;

export function demoMcpUrl(port: number): string {
  return `http://127.0.0.1:${port}/mcp`;
}

/** The Worker's own origin under `npm start`: PUBLIC_URL, so MCP OAuth's callback (<PUBLIC_URL>/oauth/callback) comes back here. */
export function localOrigin(port: number): string {
  return `http://127.0.0.1:${port}`;
}

/** The local settings npm start makes for a file that lacks them: fresh secrets, and the Worker's origin. */
export function localSettings(workerPort: number): Record<"CONSOLE_SESSION_SECRET" | "MCP_TOKEN_KEY" | "PUBLIC_URL", string> {
  return {
    // Contract section 16: 32+ characters; 64 hex digits.
    CONSOLE_SESSION_SECRET: randomBytes(32).toString("hex"),
    // Contract section 21: base64 of 32 random bytes.
    MCP_TOKEN_KEY: randomBytes(32).toString("base64"),
    PUBLIC_URL: localOrigin(workerPort),
  };
}

/** A fresh .dev.vars for a first start. */
export function newDevVars(token: string, demoPort: number, local: Record<string, string> = {}): string {
  return [
    "# Local settings for `npm start` (wrangler dev). Not committed.",
    `API_TOKEN=${token}`,
    ...Object.entries(local).map(([name, value]) => `${name}=${value}`),
    // The demo server is ours: its readOnlyHint tools may run without approval (contract section 21).
    `MCP_SERVERS='${JSON.stringify({ demo: { url: demoMcpUrl(demoPort), trust_annotations: true } })}'`,
    // The README's confirm example: an alert needs the tool's name typed to approve, once per run.
    `TOOL_POLICY='${JSON.stringify({ mcp__demo__create_alert_from_chart: { level: "confirm" } })}'`,
    // delete_dashboard's server calls it destructive, so it asks for confirm (contract section 21) without a TOOL_POLICY line.
    // schedule_report is the README's question mid-call (input_required, contract section 21).
    `MUTATION_BUDGET='${JSON.stringify({
      mcp__demo__create_dashboard: 2,
      mcp__demo__update_dashboard: 2,
      mcp__demo__create_alert_from_chart: 1,
      mcp__demo__delete_dashboard: 1,
      mcp__demo__schedule_report: 1,
      // The OAuth demo server's one tool, for the README's connect example (once MCP_SERVERS names it `hosted`).
      mcp__hosted__create_item: 1,
    })}'`,
    "",
  ].join("\n");
}

/** `text` (a .dev.vars file) with the demo server's URL pointing at `demoPort`; unchanged when it already does or has no such entry. */
export function withDemoPort(text: string, demoPort: number): string {
  return text.replace(/^MCP_SERVERS=(['"]?)(.*)\1$/m, (line, quote: string, json: string) => {
    let servers: unknown;
    try {
      servers = JSON.parse(json);
    } catch {
      return line; // not ours to fix: the Worker reports a bad MCP_SERVERS itself
    }
    const demo = (servers as { demo?: { url?: unknown } } | null)?.demo;
    if (typeof demo?.url !== "string" || !DEMO_URL.test(demo.url) || demo.url === demoMcpUrl(demoPort)) return line;
    demo.url = demoMcpUrl(demoPort);
    return `MCP_SERVERS=${quote || "'"}${JSON.stringify(servers)}${quote || "'"}`;
  });
}

/**
 * `text` with each of `local`'s settings it has no line for appended, and the
 * names appended (for the line that says so); a setting already there, with
 * any value, is left as it is.
 */
export function withLocalSettings(text: string, local: Record<string, string>): { text: string; added: string[] } {
  const added = Object.keys(local).filter((name) => !new RegExp(`^${name}=`, "m").test(text));
  if (added.length === 0) return { text, added };
  const lines = added.map((name) => `${name}=${local[name]}`);
  return { text: `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${lines.join("\n")}\n`, added };
}

/** `text` with a loopback PUBLIC_URL pointing at `workerPort` (it follows PORT like the demo URL follows DEMO_MCP_PORT); any other left alone. */
export function withWorkerPort(text: string, workerPort: number): string {
  return text.replace(/^PUBLIC_URL=(['"]?)(.*)\1$/m, (line, _quote: string, origin: string) =>
    LOOPBACK_ORIGIN.test(origin) && origin !== localOrigin(workerPort) ? `PUBLIC_URL=${localOrigin(workerPort)}` : line,
  );
}
