// Pi's session storage port over the transcript-serve HTTP API.
//
// HttpSessionStorage implements Pi's SessionStorage for one session: reads are
// answered from a cache of the session's entries (Pi's own InMemorySessionStorage,
// filled from the server when the session is opened and kept current by watch),
// every append is sent to the server with the head this client last saw as
// expectedHead, and enters the cache only once the server committed it.
// HttpSessionRepo implements Pi's SessionRepo. Requests that fail on the network,
// or that the server answers 503 (the bucket is unreachable; after its
// Retry-After) or 408 (the body came too late), are retried: appends are
// idempotent by entry id, so a retry of an append whose response was lost
// commits nothing twice.
export { type HttpClientOptions } from "./api.js";
export { HttpConflictError, serverErrorCodes, type ServerErrorCode } from "./errors.js";
export { HttpSessionRepo, type HttpSessionCreateOptions, type HttpSessionListOptions } from "./repo.js";
export { HttpSessionStorage, type HttpSessionMetadata, type WatchedEntry, type WatchOptions } from "./storage.js";
