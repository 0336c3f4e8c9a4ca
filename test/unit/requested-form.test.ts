// An MCP question's requested_schema as a form (contract section 21): which
// schemas are shown, each property's field, and the typed content (or every
// field's error) read back from what a person entered.
import { describe, expect, it } from "vitest";
import { FORM_FIELDS_MAX, formFields, readForm } from "../../src/client/requested-form";

const schema = {
  type: "object",
  properties: {
    name: { type: "string", title: "Your name", description: "As on your badge", minLength: 2, maxLength: 10 },
    email: { type: "string", format: "email" },
    site: { type: "string", format: "uri" },
    day: { type: "string", format: "date", default: "2026-12-31" },
    at: { type: "string", format: "date-time" },
    size: { type: "string", enum: ["s", "m"], enumNames: ["Small", "Medium"], default: "m" },
    tier: { type: "string", oneOf: [{ const: "gold", title: "Gold" }, { const: "free" }] },
    seats: { type: "integer", minimum: 1, maximum: 5 },
    ratio: { type: "number", maximum: 1.5 },
    agree: { type: "boolean", default: false },
  },
  required: ["name", "seats", "agree"],
};

describe("formFields", () => {
  it("turns each property into a field of its kind, in order, with labels, rules and defaults", () => {
    const fields = formFields(schema);
    expect(fields?.map((f) => [f.key, f.kind, f.required])).toEqual([
      ["name", "text", true],
      ["email", "text", false],
      ["site", "text", false],
      ["day", "text", false],
      ["at", "text", false],
      ["size", "choice", false],
      ["tier", "choice", false],
      ["seats", "number", true],
      ["ratio", "number", false],
      ["agree", "boolean", true],
    ]);
    expect(fields?.[0]).toEqual({
      key: "name",
      label: "Your name",
      description: "As on your badge",
      required: true,
      kind: "text",
      min_length: 2,
      max_length: 10,
    });
    expect(fields?.[1]).toMatchObject({ label: "email", format: "email" });
    expect(fields?.[3]).toMatchObject({ format: "date", default: "2026-12-31" });
    expect(fields?.[5]).toMatchObject({
      options: [
        { value: "s", label: "Small" },
        { value: "m", label: "Medium" },
      ],
      default: "m",
    });
    expect(fields?.[6]).toMatchObject({
      options: [
        { value: "gold", label: "Gold" },
        { value: "free", label: "free" },
      ],
    });
    expect(fields?.[7]).toMatchObject({ integer: true, minimum: 1, maximum: 5 });
    expect(fields?.[8]).toMatchObject({ integer: false, maximum: 1.5 });
    expect(fields?.[9]).toMatchObject({ default: false });
  });

  it("refuses what is no flat form: not an object schema, a nested or array property, too many properties", () => {
    expect(formFields(undefined)).toBeNull();
    expect(formFields({ type: "string" })).toBeNull();
    expect(formFields({ type: "object" })).toBeNull();
    expect(formFields({ type: "object", properties: { a: { type: "object", properties: {} } } })).toBeNull();
    expect(formFields({ type: "object", properties: { a: { type: "array", items: { type: "string" } } } })).toBeNull();
    expect(formFields({ type: "object", properties: { a: { type: "string", enum: ["x", 2] } } })).toBeNull();
    const many = Object.fromEntries(Array.from({ length: FORM_FIELDS_MAX + 1 }, (_, i) => [`p${i}`, { type: "string" }]));
    expect(formFields({ type: "object", properties: many })).toBeNull();
    expect(formFields({ type: "object", properties: {} })).toEqual([]);
  });

  it("ignores a default that is not among an enum's values", () => {
    const fields = formFields({ type: "object", properties: { c: { type: "string", enum: ["a"], default: "z" } } });
    expect(fields?.[0]).not.toHaveProperty("default");
  });
});

describe("readForm", () => {
  const fields = formFields(schema) ?? [];

  it("types what was entered: numbers as numbers, yes/no as booleans, empty optional fields left out", () => {
    const reading = readForm(fields, {
      name: "Ada",
      email: "ada@example.com",
      site: "https://example.com/x",
      day: "2026-02-28",
      at: "2026-12-31T17:00:00Z",
      size: "s",
      tier: "gold",
      seats: "3",
      ratio: "0.5",
      agree: "true",
    });
    expect(reading).toEqual({
      kind: "ok",
      content: {
        name: "Ada",
        email: "ada@example.com",
        site: "https://example.com/x",
        day: "2026-02-28",
        at: "2026-12-31T17:00:00Z",
        size: "s",
        tier: "gold",
        seats: 3,
        ratio: 0.5,
        agree: true,
      },
    });
    expect(readForm(fields, { name: "Bo", seats: " 1 ", agree: false, email: "" })).toEqual({
      kind: "ok",
      content: { name: "Bo", seats: 1, agree: false },
    });
  });

  it("names every field that does not fit, and how to fix it", () => {
    const reading = readForm(fields, {
      name: "A",
      email: "not-an-email",
      site: "example.com",
      day: "2026-02-30",
      at: "tomorrow",
      size: "xl",
      seats: "2.5",
      ratio: "2",
    });
    expect(reading.kind).toBe("invalid");
    if (reading.kind !== "invalid") return;
    expect(reading.errors).toEqual({
      name: "Enter at least 2 characters.",
      email: "Enter an email address, like name@example.com.",
      site: "Enter a full address, like https://example.com/page.",
      day: "Enter a date as YYYY-MM-DD, like 2026-12-31.",
      at: "Enter a date and time with its offset, like 2026-12-31T17:00:00Z.",
      size: "Choose one of: Small, Medium.",
      seats: "Enter a whole number.",
      ratio: "Enter at most 1.5.",
      agree: "Required: fill this in.",
    });
  });

  it("checks numbers' bounds and form, and text's length in characters", () => {
    const errorsOf = (entered: Record<string, string | boolean>) => {
      const reading = readForm(fields, { name: "Ada", agree: true, ...entered });
      return reading.kind === "invalid" ? reading.errors : {};
    };
    expect(errorsOf({ seats: "0" })).toEqual({ seats: "Enter at least 1." });
    expect(errorsOf({ seats: "6" })).toEqual({ seats: "Enter at most 5." });
    expect(errorsOf({ seats: "3", ratio: "1e1" })).toEqual({ ratio: "Enter at most 1.5." });
    expect(errorsOf({ seats: "two" })).toEqual({ seats: "Enter a whole number." });
    expect(errorsOf({ seats: "3", ratio: "0x1" })).toEqual({ ratio: "Enter a number." });
    expect(errorsOf({ seats: "3", name: "ééééééééééé" })).toEqual({ name: "Enter at most 10 characters." });
    expect(errorsOf({ seats: "3", name: "😀😀" })).toEqual({});
  });
});

describe("multi-select enums (MCP's UntitledMultiSelectEnumSchema and TitledMultiSelectEnumSchema)", () => {
  const multi = {
    type: "object",
    properties: {
      days: {
        type: "array",
        title: "Days",
        items: { type: "string", enum: ["mon", "tue", "wed"] },
        minItems: 1,
        maxItems: 2,
        default: ["tue", "sun", "tue"],
      },
      teams: {
        type: "array",
        items: {
          anyOf: [
            { const: "sre", title: "SRE" },
            { const: "web", title: "Web" },
          ],
        },
      },
    },
    required: ["days"],
  };
  const fields = formFields(multi) ?? [];

  it("reads both shapes' options, titles and bounds; keeps only a default's known values, once", () => {
    expect(fields).toEqual([
      {
        key: "days",
        label: "Days",
        required: true,
        kind: "choices",
        options: [
          { value: "mon", label: "mon" },
          { value: "tue", label: "tue" },
          { value: "wed", label: "wed" },
        ],
        min_items: 1,
        max_items: 2,
        default: ["tue"],
      },
      {
        key: "teams",
        label: "teams",
        required: false,
        kind: "choices",
        options: [
          { value: "sre", label: "SRE" },
          { value: "web", label: "Web" },
        ],
      },
    ]);
  });

  it("refuses arrays that are no multi-select, and bounds no choice can meet", () => {
    const one = (property: unknown) => formFields({ type: "object", properties: { a: property } });
    expect(one({ type: "array", items: { type: "string" } })).toBeNull();
    expect(one({ type: "array", items: { type: "number", enum: [1, 2] } })).toBeNull();
    expect(one({ type: "array", items: { type: "string", enum: ["x", 2] } })).toBeNull();
    expect(one({ type: "array", items: { anyOf: [{ const: "x", title: "X" }, { type: "string" }] } })).toBeNull();
    expect(one({ type: "array", items: { anyOf: [] } })).toBeNull();
    expect(one({ type: "array" })).toBeNull();
    expect(one({ type: "array", items: { type: "string", enum: ["x", "y"] }, minItems: 3 })).toBeNull();
    expect(one({ type: "array", items: { type: "string", enum: ["x", "y"] }, minItems: 2, maxItems: 1 })).toBeNull();
  });

  it("sends the chosen values as a list, each once; leaves an optional one with nothing chosen out", () => {
    expect(readForm(fields, { days: ["wed", "mon"], teams: [] })).toEqual({ kind: "ok", content: { days: ["wed", "mon"] } });
    expect(readForm(fields, { days: ["mon", "mon"], teams: ["web"] })).toEqual({ kind: "ok", content: { days: ["mon"], teams: ["web"] } });
  });

  it("names what does not fit: nothing chosen where required, too few or too many, a value not offered", () => {
    const errorsOf = (entered: Record<string, readonly string[] | string | boolean | undefined>) => {
      const reading = readForm(fields, entered);
      return reading.kind === "invalid" ? reading.errors : {};
    };
    expect(errorsOf({ days: [] })).toEqual({ days: "Required: choose at least one." });
    expect(errorsOf({})).toEqual({ days: "Required: choose at least one." });
    expect(errorsOf({ days: ["mon", "tue", "wed"] })).toEqual({ days: "Choose at most 2." });
    expect(errorsOf({ days: ["sun"] })).toEqual({ days: "Choose only from: mon, tue, wed." });
    expect(errorsOf({ days: ["mon"], teams: ["ops"] })).toEqual({ teams: "Choose only from: SRE, Web." });
    expect(errorsOf({ days: true })).toEqual({ days: "Choose only from: mon, tue, wed." });
    const atLeastTwo = formFields({
      type: "object",
      properties: { d: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, minItems: 2 } },
    });
    expect(readForm(atLeastTwo ?? [], { d: ["a"] })).toEqual({ kind: "invalid", errors: { d: "Choose at least 2." } });
    // A list where one value is asked for is no answer.
    expect(readForm(formFields(schema) ?? [], { name: ["Ada"], seats: "1", agree: true })).toEqual({
      kind: "invalid",
      errors: { name: "Enter one value." },
    });
  });
});
