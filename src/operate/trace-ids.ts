// W3C trace context ids for a run's one trace (contract section 22), derived
// from the run and each span's key instead of drawn at random, so every part
// of the engine computes the same ids synchronously without storing them: the
// span recorder, the MCP sender's `traceparent`, a retried export (the same
// span twice is the same span, not a duplicate). The trace id is the run's
// ULID itself (128 bits, random in its last 80); span ids are a 64-bit
// FNV-1a of (trace id, span key). Hand-written: @opentelemetry/api's id
// generators are random by design, and determinism is the point here.

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const FNV_OFFSET_64 = 0xcbf29ce484222325n;
const FNV_PRIME_64 = 0x100000001b3n;
const MASK_64 = (1n << 64n) - 1n;

function fnv1a64(text: string): bigint {
  let hash = FNV_OFFSET_64;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * FNV_PRIME_64) & MASK_64;
  }
  return hash;
}

const hex = (value: bigint, digits: number) => value.toString(16).padStart(digits, "0").slice(-digits);

/** 32 hex digits: the run's ULID as 128 bits (any other id: two FNV-1a halves). Never all zeros. */
export function traceIdOf(runId: string): string {
  const ulid = runId.replace(/^run_/, "").toUpperCase();
  let value = 0n;
  if (/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/.test(ulid)) {
    for (const ch of ulid) value = (value << 5n) | BigInt(CROCKFORD.indexOf(ch));
  } else {
    value = (fnv1a64(`a:${runId}`) << 64n) | fnv1a64(`b:${runId}`);
  }
  return value === 0n ? "1".padStart(32, "0") : hex(value, 32);
}

/** 16 hex digits for the span `key` of the run's trace. Never all zeros. */
export function spanIdOf(traceId: string, key: string): string {
  const value = fnv1a64(`${traceId}/${key}`);
  return value === 0n ? "0000000000000001" : hex(value, 16);
}

/** The W3C `traceparent` naming span `key` of the run's trace as the parent (sampled). */
export function traceparentOf(runId: string, key: string): string {
  const traceId = traceIdOf(runId);
  return `00-${traceId}-${spanIdOf(traceId, key)}-01`;
}
