// The engine client's entry point: the client, its errors and the wire types.
export {
  EngineClient,
  type EngineClientOptions,
  type FetchLike,
  type RequestOptions,
  type TriggeredStream,
  type TriggerOptions,
} from "./engine-client";
export { ApiError, type ApiErrorBody, ReplayGapError, StreamRetriesExhaustedError } from "./errors";
export { type EventStreamOptions, MalformedEventError } from "./event-stream";
export * from "./types";
