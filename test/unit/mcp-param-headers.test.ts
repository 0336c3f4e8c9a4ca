// The Mcp-Param-* headers of a 2026-07-28 tools/call (src/execution/mcp-param-headers.ts):
// which arguments ride as headers, how their values are encoded, and which declarations
// make a tool send none.
import { describe, expect, it } from "vitest";
import { paramHeaders, rememberParamHeaders } from "../../src/execution/mcp-param-headers";

let serial = 0;
/** A server URL no other case uses (the declarations are kept per isolate). */
const freshServer = () => `http://127.0.0.1:9/mcp-${++serial}`;

function headersFor(inputSchema: unknown, args: Record<string, unknown>): Record<string, string> {
  const server = freshServer();
  rememberParamHeaders(server, [{ name: "tool", inputSchema }]);
  return paramHeaders(server, "tool", args);
}

const base64 = (text: string) => `=?base64?${Buffer.from(text, "utf8").toString("base64")}?=`;

describe("Mcp-Param headers", () => {
  const schema = {
    type: "object",
    properties: {
      region: { type: "string", "x-mcp-header": "Region" },
      count: { type: "integer", "x-mcp-header": "Count" },
      dry: { type: "boolean", "x-mcp-header": "Dry-Run" },
      target: { type: "object", properties: { id: { type: "string", "x-mcp-header": "Target-Id" } } },
      note: { type: "string" },
    },
  };

  it("mirrors each declared argument, nested ones too, and nothing undeclared", () => {
    expect(headersFor(schema, { region: "eu-west-1", count: 3, dry: false, target: { id: "t-1" }, note: "x" })).toEqual({
      "Mcp-Param-Region": "eu-west-1",
      "Mcp-Param-Count": "3",
      "Mcp-Param-Dry-Run": "false",
      "Mcp-Param-Target-Id": "t-1",
    });
  });

  it("omits null and absent arguments, and values that are not primitives", () => {
    expect(headersFor(schema, { region: null, count: { n: 1 }, target: {} })).toEqual({});
  });

  it.each([
    ["non-ASCII", "Zürich"],
    ["leading whitespace", " eu"],
    ["trailing whitespace", "eu "],
    ["empty", ""],
    ["a control character", "a\nb"],
    ["the sentinel's own shape", "=?base64?abc?="],
  ])("base64-wraps a value with %s", (_label, value) => {
    expect(headersFor(schema, { region: value })).toEqual({ "Mcp-Param-Region": base64(value) });
  });

  it.each([
    ["a number-typed property", { properties: { n: { type: "number", "x-mcp-header": "N" } } }],
    ["a name that is no RFC 9110 token", { properties: { a: { type: "string", "x-mcp-header": "A B" } } }],
    [
      "a name declared twice (case-insensitively)",
      { properties: { a: { type: "string", "x-mcp-header": "Key" }, b: { type: "string", "x-mcp-header": "key" } } },
    ],
  ])("sends none for a tool with %s", (_label, inputSchema) => {
    expect(headersFor({ type: "object", ...inputSchema }, { n: 1, a: "x", b: "y" })).toEqual({});
  });

  it("sends none for a tool it has not listed, nor after a listing without declarations", () => {
    const server = freshServer();
    expect(paramHeaders(server, "tool", { region: "eu" })).toEqual({});
    rememberParamHeaders(server, [{ name: "tool", inputSchema: schema }]);
    rememberParamHeaders(server, [{ name: "tool", inputSchema: { type: "object", properties: { region: { type: "string" } } } }]);
    expect(paramHeaders(server, "tool", { region: "eu" })).toEqual({});
  });
});
