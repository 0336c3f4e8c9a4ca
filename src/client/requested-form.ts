// The form of an MCP question's `requested_schema` (contract section 21: a
// form elicitation's flat object of primitive properties, and multi-select
// enums: an array of strings from a list, revision 2025-11-25 on): the fields a
// surface shows (Slack's modal, the console's form, the CLI's prompts), and
// the typed `content` of an "accept" read back from what a person entered,
// or the per-field errors that name the fix. Pure and platform neutral.
//
// Written by hand rather than with zod or a JSON Schema validator: the
// client ships without dependencies to browsers (the console's bundle) and
// Node alike, and the schema kinds are the handful MCP's form mode allows.
// The engine validates every answer again against the schema itself; this
// is so a person sees what to fix before anything is sent.

/** A text format MCP's form mode allows on a string property. */
export type TextFormat = "email" | "uri" | "date" | "date-time";

interface FieldBase {
  /** The property's name in `content`. */
  key: string;
  /** Its `title`, else its key. */
  label: string;
  description?: string;
  required: boolean;
}

/** One input a surface shows, by the kind of value it produces. */
export type FormField =
  | (FieldBase & { kind: "text"; format?: TextFormat; min_length?: number; max_length?: number; default?: string })
  | (FieldBase & { kind: "choice"; options: { value: string; label: string }[]; default?: string })
  /** A multi-select enum: any number of its options (within min_items..max_items), sent as a list of their values. */
  | (FieldBase & {
      kind: "choices";
      options: { value: string; label: string }[];
      min_items?: number;
      max_items?: number;
      default?: string[];
    })
  | (FieldBase & { kind: "number"; integer: boolean; minimum?: number; maximum?: number; default?: number })
  | (FieldBase & { kind: "boolean"; default?: boolean });

/**
 * What a person entered for one field: text as typed (numbers and dates too), a choice's value, a yes/no,
 * the values ticked of a multi-select; absent when left empty.
 */
export type EnteredValue = string | boolean | readonly string[] | undefined;

/** An accept's `content`: property name → typed value (a multi-select's: the chosen values). */
export type FormContent = Record<string, string | number | boolean | string[]>;

export type FormReading = { kind: "ok"; content: FormContent } | { kind: "invalid"; errors: Record<string, string> };

/** The most properties one form shows: MCP's forms are small, and Slack's modal holds at most 100 blocks. */
export const FORM_FIELDS_MAX = 50;
const TEXT_FORMATS: readonly TextFormat[] = ["email", "uri", "date", "date-time"];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const stringOf = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const numberOf = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
const countOf = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;

/** The options of an enum (`enum` with optional `enumNames`, or `oneOf` of `{const,title}`), or undefined when it is none. */
function optionsOf(property: Record<string, unknown>): { value: string; label: string }[] | undefined {
  if (Array.isArray(property.oneOf)) {
    const options = property.oneOf.flatMap((o) =>
      isObject(o) && typeof o.const === "string" ? [{ value: o.const, label: stringOf(o.title) ?? o.const }] : [],
    );
    return options.length === property.oneOf.length && options.length > 0 ? options : undefined;
  }
  if (Array.isArray(property.enum)) {
    const names = Array.isArray(property.enumNames) ? property.enumNames : [];
    const options = property.enum.flatMap((v, i) => (typeof v === "string" ? [{ value: v, label: stringOf(names[i]) ?? v }] : []));
    return options.length === property.enum.length && options.length > 0 ? options : undefined;
  }
  return undefined;
}

/**
 * A multi-select enum (MCP's UntitledMultiSelectEnumSchema, `items: {type: "string", enum}`, or
 * TitledMultiSelectEnumSchema, `items: {anyOf: [{const, title}]}`) as a field, or null when it is neither.
 */
function choicesOf(base: FieldBase, property: Record<string, unknown>): FormField | null {
  const items = property.items;
  if (!isObject(items)) return null;
  let options: { value: string; label: string }[] | undefined;
  if (Array.isArray(items.anyOf)) {
    const titled = items.anyOf.flatMap((o) =>
      isObject(o) && typeof o.const === "string" ? [{ value: o.const, label: stringOf(o.title) ?? o.const }] : [],
    );
    options = titled.length === items.anyOf.length && titled.length > 0 ? titled : undefined;
  } else if (items.type === "string" && Array.isArray(items.enum)) {
    const plain = items.enum.flatMap((v) => (typeof v === "string" ? [{ value: v, label: v }] : []));
    options = plain.length === items.enum.length && plain.length > 0 ? plain : undefined;
  }
  if (!options) return null;
  const minItems = countOf(property.minItems);
  const maxItems = countOf(property.maxItems);
  // Bounds no selection can meet are no form to show.
  if (minItems !== undefined && (minItems > options.length || (maxItems !== undefined && minItems > maxItems))) return null;
  const known = new Set(options.map((o) => o.value));
  const fallback = Array.isArray(property.default)
    ? property.default.filter((v): v is string => typeof v === "string" && known.has(v))
    : [];
  return {
    ...base,
    kind: "choices",
    options,
    ...(minItems !== undefined ? { min_items: minItems } : {}),
    ...(maxItems !== undefined ? { max_items: maxItems } : {}),
    ...(fallback.length > 0 ? { default: [...new Set(fallback)] } : {}),
  };
}

/** One property as a field, or null when it is no primitive MCP's form mode defines. */
function fieldOf(key: string, property: unknown, required: boolean): FormField | null {
  if (!isObject(property)) return null;
  const base: FieldBase = {
    key,
    label: stringOf(property.title) ?? key,
    required,
    ...(stringOf(property.description) ? { description: stringOf(property.description) } : {}),
  };
  switch (property.type) {
    case "string": {
      const options = optionsOf(property);
      // An enum this module cannot offer as choices (a value that is no string) is no form to guess at.
      if (!options && (property.enum !== undefined || property.oneOf !== undefined)) return null;
      const fallback = typeof property.default === "string" ? property.default : undefined;
      if (options) {
        return {
          ...base,
          kind: "choice",
          options,
          ...(fallback !== undefined && options.some((o) => o.value === fallback) ? { default: fallback } : {}),
        };
      }
      const format = TEXT_FORMATS.find((f) => f === property.format);
      const minLength = countOf(property.minLength);
      const maxLength = countOf(property.maxLength);
      return {
        ...base,
        kind: "text",
        ...(format ? { format } : {}),
        ...(minLength !== undefined ? { min_length: minLength } : {}),
        ...(maxLength !== undefined ? { max_length: maxLength } : {}),
        ...(fallback !== undefined ? { default: fallback } : {}),
      };
    }
    case "number":
    case "integer": {
      const minimum = numberOf(property.minimum);
      const maximum = numberOf(property.maximum);
      const fallback = numberOf(property.default);
      return {
        ...base,
        kind: "number",
        integer: property.type === "integer",
        ...(minimum !== undefined ? { minimum } : {}),
        ...(maximum !== undefined ? { maximum } : {}),
        ...(fallback !== undefined ? { default: fallback } : {}),
      };
    }
    case "boolean":
      return { ...base, kind: "boolean", ...(typeof property.default === "boolean" ? { default: property.default } : {}) };
    case "array":
      return choicesOf(base, property);
    default:
      return null;
  }
}

/**
 * The fields of a `requested_schema`, in its properties' order; null when it
 * is not a form this module can show (not an object schema, a property that
 * is no flat primitive or multi-select enum, more than FORM_FIELDS_MAX properties): a surface
 * then offers decline and cancel only.
 */
export function formFields(schema: unknown): FormField[] | null {
  if (!isObject(schema) || schema.type !== "object" || !isObject(schema.properties)) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []);
  const entries = Object.entries(schema.properties);
  if (entries.length > FORM_FIELDS_MAX) return null;
  const fields: FormField[] = [];
  for (const [key, property] of entries) {
    const field = fieldOf(key, property, required.has(key));
    if (field === null) return null;
    fields.push(field);
  }
  return fields;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/** A real calendar day in YYYY-MM-DD. */
function isDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const day = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return day.toISOString().slice(0, 10) === text;
}

function isUri(text: string): boolean {
  try {
    return /^[a-z][a-z0-9+.-]*:/i.test(text) && new URL(text).href !== "";
  } catch {
    return false;
  }
}

/** Why a text does not fit its format, or null. */
function formatError(format: TextFormat, text: string): string | null {
  switch (format) {
    case "email":
      return EMAIL.test(text) ? null : "Enter an email address, like name@example.com.";
    case "uri":
      return isUri(text) ? null : "Enter a full address, like https://example.com/page.";
    case "date":
      return isDate(text) ? null : "Enter a date as YYYY-MM-DD, like 2026-12-31.";
    case "date-time":
      return DATE_TIME.test(text) && !Number.isNaN(Date.parse(text))
        ? null
        : "Enter a date and time with its offset, like 2026-12-31T17:00:00Z.";
  }
}

/** A multi-select's chosen values: each an option's, each once, as many as its bounds allow. */
function readChoices(field: Extract<FormField, { kind: "choices" }>, entered: EnteredValue): { value: string[] } | { error: string } {
  const chosen = typeof entered === "string" ? [entered] : Array.isArray(entered) ? [...entered] : undefined;
  const known = new Set(field.options.map((o) => o.value));
  if (chosen === undefined || !chosen.every((v) => typeof v === "string" && known.has(v))) {
    return { error: `Choose only from: ${field.options.map((o) => o.label).join(", ")}.` };
  }
  const value = [...new Set(chosen)];
  if (field.min_items !== undefined && value.length < field.min_items) return { error: `Choose at least ${field.min_items}.` };
  if (field.max_items !== undefined && value.length > field.max_items) return { error: `Choose at most ${field.max_items}.` };
  return { value };
}

/** One field's typed value from what was entered: the value, nothing (left empty), or why it does not fit. */
function readField(field: FormField, entered: EnteredValue): { value?: FormContent[string] } | { error: string } {
  const empty = entered === undefined || entered === "" || (Array.isArray(entered) && entered.length === 0);
  if (empty)
    return field.required ? { error: field.kind === "choices" ? "Required: choose at least one." : "Required: fill this in." } : {};
  if (field.kind === "choices") return readChoices(field, entered);
  if (typeof entered === "object") return { error: "Enter one value." };
  switch (field.kind) {
    case "boolean": {
      const value = entered === true || entered === "true" ? true : entered === false || entered === "false" ? false : undefined;
      return value === undefined ? { error: "Choose yes or no." } : { value };
    }
    case "choice":
      return typeof entered === "string" && field.options.some((o) => o.value === entered)
        ? { value: entered }
        : { error: `Choose one of: ${field.options.map((o) => o.label).join(", ")}.` };
    case "number": {
      const text = typeof entered === "string" ? entered.trim() : "";
      const value = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : Number.NaN;
      if (!Number.isFinite(value)) return { error: field.integer ? "Enter a whole number." : "Enter a number." };
      if (field.integer && !Number.isInteger(value)) return { error: "Enter a whole number." };
      if (field.minimum !== undefined && value < field.minimum) return { error: `Enter at least ${field.minimum}.` };
      if (field.maximum !== undefined && value > field.maximum) return { error: `Enter at most ${field.maximum}.` };
      return { value };
    }
    case "text": {
      if (typeof entered !== "string") return { error: "Enter text." };
      const length = [...entered].length;
      if (field.min_length !== undefined && length < field.min_length) return { error: `Enter at least ${field.min_length} characters.` };
      if (field.max_length !== undefined && length > field.max_length) return { error: `Enter at most ${field.max_length} characters.` };
      const bad = field.format ? formatError(field.format, entered) : null;
      return bad === null ? { value: entered } : { error: bad };
    }
  }
}

/** An accept's typed `content` from what was entered (by field key), or every field's error at once. */
export function readForm(fields: readonly FormField[], entered: Readonly<Record<string, EnteredValue>>): FormReading {
  const content: FormContent = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const read = readField(field, Object.hasOwn(entered, field.key) ? entered[field.key] : undefined);
    if ("error" in read) errors[field.key] = read.error;
    else if (read.value !== undefined) content[field.key] = read.value;
  }
  return Object.keys(errors).length > 0 ? { kind: "invalid", errors } : { kind: "ok", content };
}
