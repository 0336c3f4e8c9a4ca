// The deployment's own secrets by exact value (contract section 18): the
// configuration registers API_TOKEN, the model key, the Slack secrets... as
// it loads, and redaction (src/execution/redaction.ts) replaces each wherever
// it appears in text, whatever its shape. Kept here, beside the
// configuration, so loading it imports nothing from the rooms above.

/** Shorter values are not registered: they would match inside ordinary text. */
const MIN_EXACT_SECRET_CHARS = 8;
const exactSecrets = new Set<string>();

/**
 * Registers a value (API_TOKEN, the Slack secrets...) to be redacted wherever it
 * appears in text, whatever its shape. config.ts registers the deployment's own.
 */
export function registerExactSecret(value: string | undefined): void {
  if (value !== undefined && value.length >= MIN_EXACT_SECRET_CHARS) exactSecrets.add(value);
}

/** `text` with every registered secret replaced by `replacement`. */
export function redactExactSecrets(text: string, replacement: string): string {
  let out = text;
  for (const secret of exactSecrets) if (out.includes(secret)) out = out.split(secret).join(replacement);
  return out;
}
