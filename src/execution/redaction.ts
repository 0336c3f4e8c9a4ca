// Redaction of secret-looking values in tool arguments before a person (or
// any stream consumer) sees them. A key that looks like it names a secret has
// its value replaced at any depth, whatever the value's type.
export const REDACTED = "[REDACTED]";

/** token, secret, password, authorization, api key (api_key, apiKey, api-key), cookie: anywhere in the key. */
const SECRET_KEY_PATTERN = /token|secret|passw(or)?d|authori[sz]ation|api[-_ ]?key|cookie/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = isSecretKey(key) ? REDACTED : redactSecrets(inner);
    return out;
  }
  return value;
}
