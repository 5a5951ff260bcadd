// The client module for native apps and Node: see client/README.md.
export { CalendarClient, type AuthResult, type CalendarClientOptions, type Credentials, type EventRange, type SignUpFields } from './calendar-client.js'
export type { FetchInit, FetchLike, FetchResponse } from './fetch.js'
export { EventStream, STREAM_DEFAULTS, type EventsRefetch, type StreamHandlers, type StreamOptions, type StreamStatus } from './stream.js'
export { MemoryTokenStore, needsRefresh, readFrontToken, type FrontToken, type SessionTokens, type TokenStore } from './tokens.js'
export { ApiError, SessionEndedError, UnavailableError } from './errors.js'
export type { EventApplyTo, EventChangeInput, EventView } from '../schemas/event.js'
export type { ServerMessage } from '../schemas/server-message.js'
export type { UserProfile } from '../schemas/user.js'
