// What execution makes of an MCP server's answer to one tools/call (contract
// sections 4, 7 and 17): the facts the events and the durable row carry
// (is_error, content_bytes, a redacted summary of at most 2 KiB) and the text
// handed back to the model. The transport (mcp-transport.ts) only delivers the
// answer as the server gave it; cutting and redacting it is done here.
import type { CallToolResult } from "@modelcontextprotocol/client";
import type { McpFailureCode } from "./mcp-errors";
import type { McpCallAnswer } from "./mcp-transport";
import { redactText } from "./redaction";
import { truncateUtf8, utf8Length } from "./utf8-text";

export { truncateUtf8 };

/** The contract's bound on `tool_execution.result.summary` (section 4: "at most 2 KiB"). */
export const SUMMARY_MAX_BYTES = 2048;
/** Bound on the text handed back to the model: enough for any sane tool answer, far below the response cap. */
export const MODEL_TEXT_MAX_BYTES = 64 * 1024;
/** Bound on a server's JSON-RPC error message kept beside the summary. */
const RPC_MESSAGE_MAX_BYTES = 512;

export type McpCallOutcome =
  | {
      kind: "result";
      /** The tool's `isError`, or true when the server answered the call with a JSON-RPC error. */
      isError: boolean;
      /** UTF-8 bytes of JSON.stringify(result.content); 0 for a JSON-RPC error answer. */
      contentBytes: number;
      /** The content as text, redacted, at most SUMMARY_MAX_BYTES UTF-8 bytes. */
      summary: string;
      /** The content as text for the model, at most MODEL_TEXT_MAX_BYTES UTF-8 bytes. */
      modelText: string;
      /** Present when the server answered the call with a JSON-RPC error instead of a result. */
      rpcError?: { code: number; message: string };
    }
  | { kind: "failed"; code: McpFailureCode; message: string; sent: boolean };

/** The answer as the events, the row and the model see it. `maxResponseBytes`: the transport cap, applied again to the decoded content. */
export function shapeAnswer(answer: Exclude<McpCallAnswer, { kind: "input_required" }>, maxResponseBytes: number): McpCallOutcome {
  switch (answer.kind) {
    case "failed":
      return answer;
    case "rpc_error": {
      // The server answered: the call reached it and it said no. A tool error, not ambiguity.
      // Server-provided text: redacted like any other output (contract section 17).
      const message = redactText(answer.message);
      const text = `JSON-RPC error ${answer.code}: ${message}`;
      return {
        kind: "result",
        isError: true,
        contentBytes: 0,
        summary: truncateUtf8(text, SUMMARY_MAX_BYTES),
        modelText: truncateUtf8(text, MODEL_TEXT_MAX_BYTES),
        rpcError: { code: answer.code, message: truncateUtf8(message, RPC_MESSAGE_MAX_BYTES) },
      };
    }
    case "result":
      return resultOutcome(answer.result, maxResponseBytes);
  }
}

function resultOutcome(result: CallToolResult, maxResponseBytes: number): McpCallOutcome {
  const content = result.content ?? [];
  const contentBytes = utf8Length(JSON.stringify(content));
  if (contentBytes > maxResponseBytes) {
    // The body cap already bounds the wire; this catches a result that grew in decoding.
    return {
      kind: "failed",
      code: "response_too_large",
      message: `result content is ${contentBytes} bytes, over the ${maxResponseBytes}-byte cap`,
      sent: true,
    };
  }
  const text = contentText(result);
  return {
    kind: "result",
    isError: result.isError === true,
    contentBytes,
    // Redacted before the cut, so a cut cannot leave part of a credential unrecognised. The
    // model's copy stays whole: it is the tool's answer to the model, kept only in the run's object.
    summary: truncateUtf8(redactText(text), SUMMARY_MAX_BYTES),
    modelText: truncateUtf8(text, MODEL_TEXT_MAX_BYTES),
  };
}

/** The content as text: text items verbatim, other items as a short placeholder. */
function contentText(result: CallToolResult): string {
  const content = result.content ?? [];
  if (content.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return content
    .map((item) => {
      switch (item.type) {
        case "text":
          return item.text;
        case "image":
        case "audio":
          return `[${item.type}: ${item.mimeType}]`;
        case "resource":
          return `[resource: ${item.resource.uri}]`;
        case "resource_link":
          return `[resource link: ${item.uri}]`;
        default:
          return `[${(item as { type: string }).type} content]`;
      }
    })
    .join("\n");
}
