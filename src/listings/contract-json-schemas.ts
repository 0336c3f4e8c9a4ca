// The JSON Schemas committed in schemas/ (contract section 15), generated
// from the zod schemas the code validates with, by zod 4's own
// z.toJSONSchema. `npm run schemas` writes them; test/contract checks that
// the committed files are exactly what this produces (no drift).
import { z } from "zod";
import { mutationOutcomeSchema } from "../wire/mutation-outcome-schema";
import { EVENT_TYPES, eventSchemas, projectedEventSchema, runEventSchema } from "../wire/event-schemas";
import { fixtureDocumentSchema } from "../stream/fixture-schema";

/** Where the files go, relative to the repository root. */
export const SCHEMAS_DIR = "schemas";

function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  // Each file stands alone: referenced schemas are inlined or kept under its own $defs.
  return z.toJSONSchema(schema, { target: "draft-2020-12", metadata: z.globalRegistry, unrepresentable: "throw" }) as Record<
    string,
    unknown
  >;
}

/** File path (relative to SCHEMAS_DIR) → its JSON text, keys in a stable order. */
export function contractJsonSchemas(): Map<string, string> {
  const files = new Map<string, string>();
  const put = (path: string, schema: z.ZodType) => files.set(path, `${JSON.stringify(toJsonSchema(schema), null, 2)}\n`);
  for (const type of EVENT_TYPES) put(`events/${type}.json`, eventSchemas[type]);
  put("event.json", runEventSchema);
  put("mutation_outcome.v1.json", mutationOutcomeSchema);
  put("fixture-event.json", projectedEventSchema);
  put("approved_execution_v2_fixtures.v1.json", fixtureDocumentSchema);
  return files;
}
