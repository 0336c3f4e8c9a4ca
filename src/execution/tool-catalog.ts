// The MCP tools a run may call, listed once per server per object instance:
// what the model is offered (every tool of every configured server, plus
// human__ask) and each tool's annotations for the policy. A server that
// cannot list its tools leaves them unknown, and unknown means mutating.
// Each listing is reported as a contact (GET /api/mcp/servers).
import type { HostConfig } from "../config/config";
import type { ModelToolSpec } from "../providers/model-provider";
import type { McpContactSink } from "./mcp-contacts";
import { listMcpTools, type McpServerConfig, type McpToolInfo } from "./mcp-transport";
import { transportCaps } from "./mcp-send";
import { HUMAN_ASK_TOOL } from "./tool-calls";
import { parseMcpToolName } from "./tool-policy";

const HUMAN_ASK_SPEC: ModelToolSpec = {
  name: HUMAN_ASK_TOOL,
  description: "Ask a person in the channel a question and wait for their answer.",
  input_schema: {
    type: "object",
    properties: { question: { type: "string", description: "The question to ask." } },
    required: ["question"],
  },
};

export class ToolCatalog {
  readonly #config: HostConfig;
  readonly #lists = new Map<string, Promise<McpToolInfo[] | undefined>>();

  readonly #contacts: McpContactSink;

  constructor(config: HostConfig, contacts: McpContactSink = () => {}) {
    this.#config = config;
    this.#contacts = contacts;
  }

  /** One tool's listing, or undefined when it is not an MCP tool of a configured server or the server could not list it. */
  async info(toolName: string): Promise<McpToolInfo | undefined> {
    const target = parseMcpToolName(toolName);
    const server = target ? this.#config.MCP_SERVERS[target.server] : undefined;
    if (!target || !server) return undefined;
    return (await this.#list(target.server, server))?.find((t) => t.name === target.tool);
  }

  /** What the model may call. */
  async modelTools(): Promise<ModelToolSpec[]> {
    const tools: ModelToolSpec[] = [HUMAN_ASK_SPEC];
    for (const [server, settings] of Object.entries(this.#config.MCP_SERVERS)) {
      for (const tool of (await this.#list(server, settings)) ?? []) {
        tools.push({ name: `mcp__${server}__${tool.name}`, description: tool.description ?? "", input_schema: tool.inputSchema });
      }
    }
    return tools;
  }

  #list(name: string, server: McpServerConfig): Promise<McpToolInfo[] | undefined> {
    let list = this.#lists.get(name);
    if (!list) {
      list = listMcpTools(server, transportCaps(this.#config)).then(
        (listing) => {
          this.#contacts(name, { kind: "connected", protocol_version: listing.protocolVersion, tools: listing.tools.length });
          return listing.tools;
        },
        () => {
          this.#contacts(name, { kind: "failed" });
          return undefined;
        },
      );
      this.#lists.set(name, list);
    }
    return list;
  }
}
