// The engine client's entry point (the package's `approved-execution-engine/client`):
// the client, its errors, the page walker and the wire types.
export {
  EngineClient,
  type EngineClientOptions,
  type FetchLike,
  type RequestOptions,
  type TriggeredStream,
  type TriggerOptions,
} from "./engine-client.js";
export { ApiError, type ApiErrorBody, ReplayGapError, StreamRetriesExhaustedError } from "./errors.js";
export { type EventStreamOptions, MalformedEventError } from "./event-stream.js";
export { CursorLoopError, type PageFetcher, type WalkOptions, walkPages } from "./pages.js";
export * from "./types.js";
export {
  type EnteredValue,
  type FormContent,
  type FormField,
  type FormReading,
  formFields,
  readForm,
  type TextFormat,
} from "./requested-form.js";
export { type AdapterHooks, createHookDispatcher } from "./adapter-hooks.js";
export {
  type AuditCheck,
  type AuditCheckpoint,
  type AuditPublicJwk,
  type AuditVerifyReport,
  canonicalJson,
  checkpointSignatureValid,
  detailsHash,
  entryHash,
  GENESIS_PREV_HASH,
  hashedForm,
  jwkThumbprint,
  type SealedAuditEntry,
  verifyAuditExport,
} from "./audit-chain.js";
