// The MCP tools a run may call, listed once per server per object instance:
// what the model is offered (every tool of every configured server, plus
// human__ask) and each tool's annotations for the policy. A server that
// cannot list its tools leaves them unknown, and unknown means mutating.
// Each listing is reported as a contact (GET /api/mcp/servers).
import type { HostConfig } from "../config/config";
import type { ModelToolSpec } from "../providers/model-provider";
import type { McpContactSink } from "./mcp-contacts";
import { McpTransportError } from "./mcp-errors";
import { listMcpTools, type McpToolInfo } from "./mcp-tool-list";
import { transportCaps } from "./mcp-send";
import { HUMAN_ASK_TOOL } from "./tool-calls";
import { toolDigest } from "./tool-identity";
import { parseMcpToolName } from "./tool-policy";
import { HEADERS_ONLY, isAuthRefusal, type McpAuthorization } from "../mcp-oauth/server-access";

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
  readonly #authorization: McpAuthorization;

  constructor(config: HostConfig, contacts: McpContactSink = () => {}, authorization: McpAuthorization = HEADERS_ONLY) {
    this.#config = config;
    this.#contacts = contacts;
    this.#authorization = authorization;
  }

  /** One tool's listing, or undefined when it is not an MCP tool of a configured server or the server could not list it. */
  async info(toolName: string): Promise<McpToolInfo | undefined> {
    const target = parseMcpToolName(toolName);
    const server = target ? this.#config.MCP_SERVERS[target.server] : undefined;
    if (!target || !server) return undefined;
    return (await this.#list(target.server, server))?.find((t) => t.name === target.tool);
  }

  /**
   * The tool's `tool_digest` as this catalog listed it (contract section 23), over the server's
   * url as configured; undefined when `info` has no listing of it.
   */
  async digest(toolName: string, info: McpToolInfo | undefined): Promise<string | undefined> {
    const target = parseMcpToolName(toolName);
    const server = target ? this.#config.MCP_SERVERS[target.server] : undefined;
    if (!server || info === undefined) return undefined;
    return toolDigest(server.url, info.identity);
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

  #list(name: string, server: HostConfig["MCP_SERVERS"][string]): Promise<McpToolInfo[] | undefined> {
    let list = this.#lists.get(name);
    if (!list) {
      // An OAuth server is listed with its token (contract section 21); without one its tools stay unknown.
      let accessToken: string | undefined;
      list = this.#authorization
        .access(name, server)
        .then((access) => {
          if (access.kind === "authorization_required") throw new Error(access.message);
          accessToken = access.server.accessToken;
          return listMcpTools(access.server, transportCaps(this.#config));
        })
        .then(
          (listing) => {
            this.#contacts(name, { kind: "connected", protocol_version: listing.protocolVersion, tools: listing.tools.length });
            return listing.tools;
          },
          async (error: unknown) => {
            this.#contacts(name, { kind: "failed" });
            if (error instanceof McpTransportError && isAuthRefusal(error.httpStatus))
              await this.#authorization.refused(name, server, accessToken);
            return undefined;
          },
        );
      this.#lists.set(name, list);
    }
    return list;
  }
}
