// The client's public wire types (src/client/types.ts) pinned to the server's
// zod schemas, the one declaration of the wire: the event stream, the
// mutation_outcome/v1 projection and every listing item and page. The client
// declares its types itself so that it ships on its own (no zod, no server
// code in its build), and these type tests are what keeps the two the same:
// a field added, dropped, renamed or retyped on one side only fails
// `npm run typecheck` (part of `npm test`), before any e2e test runs. The
// runtime assertions below check the same pairs by their keys, so the file
// also fails under vitest alone.
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { auditEntrySchema, auditPageSchema } from "../../src/audit/audit-reads";
import type {
  ApprovalListItem,
  AuditEntry,
  AuditPage,
  ApprovalsPage,
  EngineEvent,
  EngineEventType,
  InputListItem,
  InputsPage,
  McpServerListItem,
  McpServersListing,
  MutationOutcome,
  MutationsPage,
  RunListItem,
  RunsPage,
} from "../../src/client/types";
import {
  type approvalListItemSchema,
  type approvalsPageSchema,
  type inputListItemSchema,
  type inputsPageSchema,
  type mcpServerListItemSchema,
  mcpServersListingSchema,
  type mutationsPageSchema,
  type runListItemSchema,
  runsPageSchema,
} from "../../src/wire/listing-schemas";
import { mutationOutcomeSchema } from "../../src/wire/mutation-outcome-schema";
import { EVENT_TYPES, eventSchemas, type runEventSchema } from "../../src/wire/event-schemas";
import type { EventType } from "../../src/wire/events";

/** One object type, intersections flattened: expectTypeOf tells `A & B` from the same fields written out. */
type Flat<T> = { [K in keyof T]: T[K] };
type Wire<S extends z.ZodType> = Flat<z.output<S>>;
type ClientEvent<T extends EngineEventType> = Flat<Extract<EngineEvent, { type: T }>>;

describe("the client's wire types are the server's schemas", () => {
  it("declares the same event types", () => {
    expectTypeOf<EngineEventType>().toEqualTypeOf<EventType>();
    expectTypeOf<EngineEvent["type"]>().toEqualTypeOf<z.output<typeof runEventSchema>["type"]>();
    expect(EVENT_TYPES.length).toBe(Object.keys(eventSchemas).length);
  });

  it("declares each event with exactly the schema's fields", () => {
    expectTypeOf<ClientEvent<"run_started">>().toEqualTypeOf<Wire<typeof eventSchemas.run_started>>();
    expectTypeOf<ClientEvent<"assistant_message">>().toEqualTypeOf<Wire<typeof eventSchemas.assistant_message>>();
    expectTypeOf<ClientEvent<"tool_started">>().toEqualTypeOf<Wire<typeof eventSchemas.tool_started>>();
    expectTypeOf<ClientEvent<"approval_requested">>().toEqualTypeOf<Wire<typeof eventSchemas.approval_requested>>();
    expectTypeOf<ClientEvent<"approval_vote">>().toEqualTypeOf<Wire<typeof eventSchemas.approval_vote>>();
    expectTypeOf<ClientEvent<"approval_resolved">>().toEqualTypeOf<Wire<typeof eventSchemas.approval_resolved>>();
    expectTypeOf<ClientEvent<"approval_reminded">>().toEqualTypeOf<Wire<typeof eventSchemas.approval_reminded>>();
    expectTypeOf<ClientEvent<"approval_escalated">>().toEqualTypeOf<Wire<typeof eventSchemas.approval_escalated>>();
    expectTypeOf<ClientEvent<"tool_execution_started">>().toEqualTypeOf<Wire<typeof eventSchemas.tool_execution_started>>();
    expectTypeOf<ClientEvent<"human_input_requested">>().toEqualTypeOf<Wire<typeof eventSchemas.human_input_requested>>();
    expectTypeOf<ClientEvent<"human_input_received">>().toEqualTypeOf<Wire<typeof eventSchemas.human_input_received>>();
    expectTypeOf<ClientEvent<"tool_execution">>().toEqualTypeOf<Wire<typeof eventSchemas.tool_execution>>();
    expectTypeOf<ClientEvent<"tool_completed">>().toEqualTypeOf<Wire<typeof eventSchemas.tool_completed>>();
    expectTypeOf<ClientEvent<"heartbeat">>().toEqualTypeOf<Wire<typeof eventSchemas.heartbeat>>();
    expectTypeOf<ClientEvent<"run_completed">>().toEqualTypeOf<Wire<typeof eventSchemas.run_completed>>();
    expectTypeOf<ClientEvent<"run_failed">>().toEqualTypeOf<Wire<typeof eventSchemas.run_failed>>();
    for (const type of EVENT_TYPES) expect(eventSchemas[type].shape.type.value).toBe(type);
  });

  it("declares mutation_outcome/v1 as its schema", () => {
    expectTypeOf<MutationOutcome>().toEqualTypeOf<Wire<typeof mutationOutcomeSchema>>();
    expect(mutationOutcomeSchema.shape.schema.value).toBe("mutation_outcome/v1");
  });

  it("declares every listing item and page as its schema", () => {
    expectTypeOf<RunListItem>().toEqualTypeOf<Wire<typeof runListItemSchema>>();
    expectTypeOf<ApprovalListItem>().toEqualTypeOf<Wire<typeof approvalListItemSchema>>();
    expectTypeOf<InputListItem>().toEqualTypeOf<Wire<typeof inputListItemSchema>>();
    expectTypeOf<RunsPage>().toEqualTypeOf<Wire<typeof runsPageSchema>>();
    expectTypeOf<ApprovalsPage>().toEqualTypeOf<Wire<typeof approvalsPageSchema>>();
    expectTypeOf<InputsPage>().toEqualTypeOf<Wire<typeof inputsPageSchema>>();
    expectTypeOf<MutationsPage>().toEqualTypeOf<Wire<typeof mutationsPageSchema>>();
    expectTypeOf<AuditEntry>().toEqualTypeOf<Wire<typeof auditEntrySchema>>();
    expectTypeOf<AuditPage>().toEqualTypeOf<Wire<typeof auditPageSchema>>();
    expect(Object.keys(runsPageSchema.shape).sort()).toEqual(["next_cursor", "runs"]);
  });

  it("declares the MCP servers listing as its schema", () => {
    expectTypeOf<McpServerListItem>().toEqualTypeOf<Wire<typeof mcpServerListItemSchema>>();
    expectTypeOf<McpServersListing>().toEqualTypeOf<Wire<typeof mcpServersListingSchema>>();
    expect(Object.keys(mcpServersListingSchema.shape)).toEqual(["servers"]);
  });
});
