// The machine-readable shape of the producer fixtures (contract section 12,
// test/fixtures/approved_execution_v2.json): each example's projected events
// and the projected durable outcome rows, identities normalised and times
// replaced by placeholders. Generated into schemas/ with the event schemas.
import { z } from "zod";
import { mutationOutcomeShape } from "../wire/mutation-outcome-schema";
import { PROTOCOL_VERSION } from "../wire/events";
import { projectedEventSchema } from "../wire/event-schemas";

const FIXTURE_DOCUMENT_SCHEMA = "approved_execution_v2_fixtures/v1";

/** A mutation_outcome/v1 row as a fixture keeps it: times are placeholders, result and error reduced to their facts. */
export const projectedMutationOutcomeSchema = z
  .object({
    ...mutationOutcomeShape({
      created_at: z.literal("<created_at>"),
      settled_at: z.literal("<settled_at>"),
      approved_at: z.literal("<approved_at>"),
    }),
    result: z.object({ is_error: z.boolean() }).strict().optional(),
    error: z.object({ code: z.string() }).strict().optional(),
  })
  .strict()
  .meta({ id: "ProjectedMutationOutcome", title: "mutation_outcome/v1 (fixture projection)" });

const exampleSchema = z
  .object({
    description: z.string(),
    events: z.array(projectedEventSchema),
    mutation_outcomes: z.array(projectedMutationOutcomeSchema),
  })
  .strict();

export const fixtureDocumentSchema = z
  .object({
    schema: z.literal(FIXTURE_DOCUMENT_SCHEMA),
    protocol_version: z.literal(PROTOCOL_VERSION),
    generated_by: z.string(),
    notes: z.string(),
    examples: z.object({ success: exampleSchema, pre_dispatch_expiry: exampleSchema, dispatched_timeout: exampleSchema }).strict(),
  })
  .strict()
  .meta({ id: "ApprovedExecutionFixtures", title: FIXTURE_DOCUMENT_SCHEMA });
