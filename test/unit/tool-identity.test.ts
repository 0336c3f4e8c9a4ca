// The tool digest of contract section 23: `sha256:` and the lower-case hex SHA-256 of the RFC 8785
// form of {"server_url","name","title"?,"description"?,"inputSchema","outputSchema"?,"annotations"?}
// as listed. Every expected value here is written from the contract's and RFC 8785's text: the
// canonical strings by hand, their hashes with node:crypto (and one hex computed outside this
// repository), never by the code under test.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { toolDigest, toolIdentityText } from "../../src/execution/tool-identity";

const URL = "http://127.0.0.1:3001/mcp";
const sha256 = (text: string) => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;

describe("tool_digest (contract section 23)", () => {
  it("is the SHA-256 of the RFC 8785 form: members sorted, absent ones omitted, no whitespace", async () => {
    // Written in an order RFC 8785 does not keep; title, outputSchema and annotations absent.
    const identity = {
      name: "create_kpi",
      inputSchema: { type: "object", required: ["name"], properties: { name: { type: "string" } } },
      description: "Create a KPI.",
    };
    const canonical =
      '{"description":"Create a KPI.","inputSchema":{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"},' +
      '"name":"create_kpi","server_url":"http://127.0.0.1:3001/mcp"}';
    expect(toolIdentityText(URL, identity)).toBe(canonical);
    // Computed by hand from the canonical string above (Python's hashlib), not by this repository's code.
    expect(await toolDigest(URL, identity)).toBe("sha256:a65443a885a499c1e09bd4260bde12bd13cf520cb926fbe842900d5e1c839ea2");
    expect(await toolDigest(URL, identity)).toBe(sha256(canonical));
    // A member present as undefined is absent.
    expect(await toolDigest(URL, { ...identity, title: undefined, outputSchema: undefined })).toBe(sha256(canonical));
  });

  it("covers the server url, the name, title, description, inputSchema, outputSchema and annotations, and nothing else", async () => {
    const base = { name: "t", inputSchema: { type: "object" } };
    const digest = await toolDigest(URL, base);
    expect(digest).toBe(sha256('{"inputSchema":{"type":"object"},"name":"t","server_url":"http://127.0.0.1:3001/mcp"}'));
    const changed = [
      toolDigest("http://127.0.0.1:3002/mcp", base),
      toolDigest(URL, { ...base, name: "u" }),
      toolDigest(URL, { ...base, title: "T" }),
      toolDigest(URL, { ...base, description: "" }),
      toolDigest(URL, { ...base, inputSchema: { type: "object", properties: {} } }),
      toolDigest(URL, { ...base, outputSchema: { type: "object" } }),
      toolDigest(URL, { ...base, annotations: { readOnlyHint: false } }),
    ];
    const digests = await Promise.all(changed);
    expect(new Set([digest, ...digests]).size).toBe(digests.length + 1);
    expect(await toolDigest(URL, { ...base, title: "T", annotations: { readOnlyHint: false } })).toBe(
      sha256(
        '{"annotations":{"readOnlyHint":false},"inputSchema":{"type":"object"},"name":"t","server_url":"http://127.0.0.1:3001/mcp","title":"T"}',
      ),
    );
    // Members the contract does not list (icons, _meta, execution) do not count.
    const listed = { ...base, icons: [{ src: "https://x/i.png" }], _meta: { v: 2 }, execution: { taskSupport: "optional" } };
    expect(await toolDigest(URL, listed)).toBe(digest);
  });

  it("sorts members by UTF-16 code units and writes non-ASCII as itself, hashed as UTF-8 (RFC 8785 section 3.2.3's example)", async () => {
    const annotations = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    const text = toolIdentityText(URL, {
      name: "\u00fcn\u00efc\u00f6d\u00e9",
      description: "line\nbreak\u000f \u2028",
      inputSchema: {},
      annotations,
    });
    expect(text).toBe(
      '{"annotations":{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"},' +
        '"description":"line\\nbreak\\u000f \u2028","inputSchema":{},"name":"\u00fcn\u00efc\u00f6d\u00e9","server_url":"http://127.0.0.1:3001/mcp"}',
    );
    const identity = { name: "\u00fcn\u00efc\u00f6d\u00e9", description: "line\nbreak\u000f \u2028", inputSchema: {}, annotations };
    expect(await toolDigest(URL, identity)).toBe(sha256(text));
  });

  it("writes numbers as ECMAScript does (RFC 8785 section 3.2.2.3)", async () => {
    // RFC 8785's own sample, parsed from JSON text as a listing arrives, with -0 and an integer.
    const inputSchema = JSON.parse('{"enum":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001,-0,100]}') as Record<
      string,
      unknown
    >;
    const canonical =
      '{"inputSchema":{"enum":[333333333.3333333,1e+30,4.5,0.002,1e-27,0,100]},"name":"n","server_url":"http://127.0.0.1:3001/mcp"}';
    expect(toolIdentityText(URL, { name: "n", inputSchema })).toBe(canonical);
    expect(await toolDigest(URL, { name: "n", inputSchema })).toBe(sha256(canonical));
  });
});
