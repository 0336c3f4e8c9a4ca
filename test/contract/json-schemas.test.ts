// The committed JSON Schemas (contract section 15): schemas/ holds exactly
// what the zod schemas in src/ generate (run `npm run schemas` after changing
// them), and every producer fixture (section 12) validates against the
// projection schemas, both the zod ones and the committed JSON Schema files
// (read by @cfworker/json-schema, a validator nobody here wrote).
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { contractJsonSchemas, SCHEMAS_DIR } from "../../src/listings/contract-json-schemas";
import { projectedEventSchema } from "../../src/wire/event-schemas";
import { fixtureDocumentSchema, projectedMutationOutcomeSchema } from "../../src/stream/fixture-schema";

const ROOT = join(import.meta.dirname, "..", "..");

async function committedFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await committedFiles(path)));
    else out.push(relative(join(ROOT, SCHEMAS_DIR), path));
  }
  return out.sort();
}

const readJson = async (path: string) => JSON.parse(await readFile(join(ROOT, path), "utf8"));

describe("committed JSON Schemas", () => {
  it("are exactly what the code generates (no drift; fix with `npm run schemas`)", async () => {
    const generated = contractJsonSchemas();
    expect(await committedFiles(join(ROOT, SCHEMAS_DIR)), "the set of files in schemas/").toEqual([...generated.keys()].sort());
    for (const [path, text] of generated) {
      const committed = await readFile(join(ROOT, SCHEMAS_DIR, path), "utf8");
      expect(committed, `schemas/${path} differs from what the code generates; run npm run schemas`).toBe(text);
    }
  });

  it("cover every event type, mutation_outcome/v1 and the fixture projections", () => {
    const names = [...contractJsonSchemas().keys()];
    expect(names.filter((n) => n.startsWith("events/"))).toHaveLength(16);
    expect(names).toEqual(
      expect.arrayContaining(["event.json", "mutation_outcome.v1.json", "fixture-event.json", "approved_execution_v2_fixtures.v1.json"]),
    );
  });
});

describe("producer fixtures against the projection schemas", () => {
  it("every fixture event and outcome row validates, in zod and in the committed JSON Schema", async () => {
    const fixtures = await readJson("test/fixtures/approved_execution_v2.json");
    const eventValidator = new Validator(await readJson(`${SCHEMAS_DIR}/fixture-event.json`), "2020-12", false);
    const documentValidator = new Validator(await readJson(`${SCHEMAS_DIR}/approved_execution_v2_fixtures.v1.json`), "2020-12", false);
    expect(fixtureDocumentSchema.safeParse(fixtures).error?.issues).toBeUndefined();
    expect(documentValidator.validate(fixtures).errors).toEqual([]);
    let events = 0;
    for (const [name, example] of Object.entries<any>(fixtures.examples)) {
      for (const event of example.events) {
        const parsed = projectedEventSchema.safeParse(event);
        expect(parsed.error?.issues, `${name} #${event.sequence}`).toBeUndefined();
        expect(eventValidator.validate(event).errors, `${name} #${event.sequence}`).toEqual([]);
        events += 1;
      }
      for (const row of example.mutation_outcomes)
        expect(projectedMutationOutcomeSchema.safeParse(row).error?.issues, name).toBeUndefined();
    }
    expect(events).toBeGreaterThanOrEqual(15);
  });

  it("reject a projected event with a field the projection leaves out, and an outcome row with a real time", async () => {
    const fixtures = await readJson("test/fixtures/approved_execution_v2.json");
    const event = fixtures.examples.success.events.find((e: any) => e.type === "approval_requested");
    expect(projectedEventSchema.safeParse(event).success).toBe(true);
    expect(projectedEventSchema.safeParse({ ...event, description: "left out of projections" }).success).toBe(false);
    expect(projectedEventSchema.safeParse({ ...event, at: "2026-11-29T10:00:00.000Z" }).success).toBe(false);
    const row = fixtures.examples.success.mutation_outcomes[0];
    expect(projectedMutationOutcomeSchema.safeParse({ ...row, created_at: "2026-11-29T10:00:00.000Z" }).success).toBe(false);
  });
});
