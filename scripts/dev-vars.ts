// The settings `npm start` keeps in .dev.vars, kept consistent with the ports
// of this start: the demo MCP server's URL in MCP_SERVERS follows
// DEMO_MCP_PORT on every start instead of being frozen by the first one. Only
// the `demo` entry on loopback is touched; servers a developer added stay.
const DEMO_URL = /^http:\/\/127\.0\.0\.1:\d+\/mcp$/;

export function demoMcpUrl(port: number): string {
  return `http://127.0.0.1:${port}/mcp`;
}

/** A fresh .dev.vars for a first start. */
export function newDevVars(token: string, demoPort: number): string {
  return [
    "# Local settings for `npm start` (wrangler dev). Not committed.",
    `API_TOKEN=${token}`,
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

/** Contract section 18: API_TOKEN has at least this many characters, else the Worker answers bad_config. */
const MIN_TOKEN_CHARS = 32;

/**
 * `text` with an API_TOKEN shorter than 32 characters (what earlier versions of
 * `npm start` wrote) replaced by `fresh`, so an old .dev.vars keeps `npm start`
 * working in one step; unchanged when the token is long enough or absent.
 */
export function withLongEnoughToken(text: string, fresh: string): string {
  return text.replace(/^API_TOKEN=(.*)$/m, (line, value: string) =>
    value.trim().replace(/^['"]|['"]$/g, "").length >= MIN_TOKEN_CHARS ? line : `API_TOKEN=${fresh}`,
  );
}
