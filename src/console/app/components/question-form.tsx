// The form of one MCP server's question mid-call (contract sections 16 and
// 21): one input per property of its `requested_schema` (text, email, address,
// date, number, a choice, yes/no, checkboxes for a multi-select), checked in the page before it is sent
// (src/client/requested-form.ts), then Accept with the typed content, Decline
// or Cancel. The engine checks the content again and who may answer.
import { useState } from "preact/hooks";
import { type EnteredValue, type FormField, formFields, readForm } from "../../../client/requested-form";
import type { InputAnswer } from "../../../client/types";
import { engine, errorText } from "../api";
import { ErrorLine } from "./error-line";
import { TimeLeft } from "./time-left";

export interface FormQuestion {
  input_id: string;
  question: string;
  requested_schema: unknown;
  expires_at: string;
}

/** What a field starts with: the schema's default, as the input holds it. */
function initialOf(field: FormField): EnteredValue {
  if (field.default === undefined) return undefined;
  return typeof field.default === "number" ? String(field.default) : field.default;
}

/** A multi-select: one checkbox per option in a fieldset, its legend the field's label. */
function ChoicesInput({
  field,
  id,
  value,
  error,
  onChange,
}: {
  field: Extract<FormField, { kind: "choices" }>;
  id: string;
  value: EnteredValue;
  error?: string;
  onChange: (value: EnteredValue) => void;
}) {
  const chosen: readonly string[] = Array.isArray(value) ? value : [];
  const described = [field.description ? `${id}-about` : "", error ? `${id}-error` : ""].filter((d) => d !== "").join(" ") || undefined;
  const bounds = [
    field.min_items !== undefined && field.min_items > 0 ? `at least ${field.min_items}` : "",
    field.max_items !== undefined ? `at most ${field.max_items}` : "",
  ].filter((b) => b !== "");
  return (
    <fieldset
      class="field choices"
      data-field={field.key}
      data-kind={field.kind}
      aria-invalid={error ? "true" : undefined}
      aria-describedby={described}
    >
      <legend>
        {field.label}
        {field.required ? <span class="required"> (required)</span> : null}
        {bounds.length > 0 ? <span class="meta"> (choose {bounds.join(", ")})</span> : null}
      </legend>
      {field.options.map((o, i) => (
        <label key={o.value} for={`${id}-${i}`}>
          <input
            id={`${id}-${i}`}
            type="checkbox"
            name={field.key}
            value={o.value}
            checked={chosen.includes(o.value)}
            onChange={(e) => {
              const on = e.currentTarget.checked;
              // Kept in the options' order, whatever order they were ticked in.
              onChange(field.options.map((x) => x.value).filter((v) => (v === o.value ? on : chosen.includes(v))));
            }}
          />{" "}
          {o.label}
        </label>
      ))}
      <FieldNotes id={id} description={field.description} error={error} />
    </fieldset>
  );
}

/** A field's description and its error, each with the id its input's aria-describedby names. */
function FieldNotes({ id, description, error }: { id: string; description?: string | undefined; error?: string | undefined }) {
  return (
    <>
      {description ? (
        <span id={`${id}-about`} class="meta">
          {" "}
          {description}
        </span>
      ) : null}
      {error ? (
        <span id={`${id}-error`} class="field-error">
          {" "}
          {error}
        </span>
      ) : null}
    </>
  );
}

function FieldInput({
  field,
  id,
  value,
  error,
  onChange,
}: {
  field: FormField;
  id: string;
  value: EnteredValue;
  error?: string;
  onChange: (value: EnteredValue) => void;
}) {
  if (field.kind === "choices") return <ChoicesInput field={field} id={id} value={value} error={error} onChange={onChange} />;
  const described = [field.description ? `${id}-about` : "", error ? `${id}-error` : ""].filter((d) => d !== "").join(" ") || undefined;
  const common = { id, name: field.key, "aria-invalid": error ? ("true" as const) : undefined, "aria-describedby": described };
  const text = typeof value === "string" ? value : "";
  const input = (() => {
    switch (field.kind) {
      case "boolean":
        return (
          <select
            {...common}
            value={value === undefined ? "" : String(value)}
            onChange={(e) => onChange(e.currentTarget.value || undefined)}
          >
            <option value="">{field.required ? "Choose…" : "(no answer)"}</option>
            <option value="true">Yes</option>
            <option value="false">No</option>
          </select>
        );
      case "choice":
        return (
          <select {...common} value={text} onChange={(e) => onChange(e.currentTarget.value || undefined)}>
            <option value="">{field.required ? "Choose…" : "(no answer)"}</option>
            {field.options.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        );
      case "number":
        return (
          <input
            {...common}
            type="number"
            step={field.integer ? 1 : "any"}
            min={field.minimum}
            max={field.maximum}
            value={text}
            onInput={(e) => onChange(e.currentTarget.value)}
          />
        );
      case "text":
        // A date picks a day (the value is YYYY-MM-DD); everything else is typed (an email or address with its keyboard), its format checked by readForm.
        return field.format === "date" ? (
          <input {...common} type="date" value={text} onInput={(e) => onChange(e.currentTarget.value)} />
        ) : (
          <input
            {...common}
            type="text"
            inputMode={field.format === "email" ? "email" : field.format === "uri" ? "url" : "text"}
            placeholder={field.format === "date-time" ? "2026-12-31T17:00:00Z" : undefined}
            value={text}
            onInput={(e) => onChange(e.currentTarget.value)}
          />
        );
    }
  })();
  return (
    <p class="field" data-field={field.key} data-kind={field.kind}>
      <label for={id}>
        {field.label}
        {field.required ? <span class="required"> (required)</span> : null}
      </label>{" "}
      {input}
      <FieldNotes id={id} description={field.description} error={error} />
    </p>
  );
}

export function QuestionForm({
  runId,
  question,
  now,
  onSending,
  onDone,
}: {
  runId: string;
  question: FormQuestion;
  now: number;
  /**
   * Called as the answer is sent: an inbox keeps the item from then on, so a poll of the
   * listing that no longer has it (the index took the answer first) cannot unmount this form
   * before it shows its confirmation.
   */
  onSending?: () => void;
  onDone?: () => void;
}) {
  const fields = formFields(question.requested_schema);
  const [entered, setEntered] = useState<Record<string, EnteredValue>>(() =>
    Object.fromEntries((fields ?? []).map((f) => [f.key, f.kind === "boolean" ? f.default : initialOf(f)])),
  );
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const prefix = `f-${runId}-${question.input_id}`.replace(/[^A-Za-z0-9_-]/g, "_");
  if (done) return <p class="decided">{done}</p>;
  const send = async (action: "accept" | "decline" | "cancel") => {
    setError(undefined);
    let body: InputAnswer = { action: action === "decline" ? "decline" : "cancel" };
    if (action === "accept") {
      if (fields === null) return;
      const reading = readForm(fields, entered);
      if (reading.kind === "invalid") {
        setErrors(reading.errors);
        return;
      }
      setErrors({});
      body = { action: "accept", content: reading.content };
    }
    setBusy(true);
    onSending?.();
    try {
      await engine.answerInput(runId, question.input_id, body);
      setDone(action === "accept" ? "Answer sent." : action === "decline" ? "Declined." : "Cancelled.");
      onDone?.();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="answer question-form"
      aria-label="Answer the tool's question"
      data-input-id={question.input_id}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void send("accept");
      }}
    >
      <p>
        <span class="question">{question.question}</span> <TimeLeft expiresAt={question.expires_at} now={now} />
      </p>
      {fields === null ? (
        <p class="meta">This question's form cannot be shown here: decline or cancel it.</p>
      ) : (
        fields.map((field, i) => (
          <FieldInput
            key={field.key}
            field={field}
            id={`${prefix}-${i}`}
            value={entered[field.key]}
            error={errors[field.key]}
            onChange={(value) => setEntered((all) => ({ ...all, [field.key]: value }))}
          />
        ))
      )}
      <p class="actions">
        {fields === null ? null : (
          <button type="submit" disabled={busy}>
            Accept
          </button>
        )}{" "}
        <button type="button" class="deny" disabled={busy} onClick={() => void send("decline")}>
          Decline
        </button>{" "}
        <button type="button" class="secondary" disabled={busy} onClick={() => void send("cancel")}>
          Cancel
        </button>
      </p>
      <ErrorLine message={error} />
    </form>
  );
}
