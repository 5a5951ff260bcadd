// The event stream, GET /api/events/stream (docs/event-stream.md), read
// with a streaming fetch and eventsource-parser (no EventSource, no DOM):
// - a stream that drops (the backend restarted, the network went) is opened again after the
//   server's `retry` hint, then with a growing delay while the backend does not answer;
// - before the server's planned end (20 minutes, or the access token's expiry if sooner) a fresh
//   stream is opened, with a fresh token when the old one is about to expire, and the old one is
//   closed once the new one is registered, so no message falls in a gap;
// - a 401 refreshes the session once; a refused refresh ends the session (the client's
//   onReauthRequired) and the stream;
// - each message is handed to the handler of the specification's client reaction.
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { backoffDelay } from '../lib/backoff.js'
import type {
  CalendarsChangedMessage, CONNECTION_REVOKED, EventsChangedMessage, ImportCompletedMessage, LEGACY_CONNECTION_REVOKED,
  ServerMessage, SyncStatusChangedMessage, UserMetadataChangedMessage
} from '../schemas/server-message.js'
import type { Provider } from '../schemas/sync/index.js'
import type { FetchResponse } from './fetch.js'
import { SessionEndedError, UnavailableError } from './errors.js'

/** What a stream needs of the client that opens it (CalendarClient): its session's tokens and the stream request. */
export interface StreamSession {
  accessToken: (validForMs?: number) => Promise<string>
  accessTokenExpiresAt: () => Promise<number | null>
  tokenAfterUnauthorized: (refused: string) => Promise<string>
  openStream: (accessToken: string, signal: AbortSignal) => Promise<FetchResponse>
  failureOf: (response: FetchResponse, text: string) => Error
  sessionRefused: () => Promise<SessionEndedError>
}

const REVOKED: typeof CONNECTION_REVOKED = 'CONNECTION_REVOKED'
const LEGACY_REVOKED: typeof LEGACY_CONNECTION_REVOKED = 'GOOGLE_REVOKED'

/** What to refetch after eventsChanged: every event query, or those touching the ids. */
export interface EventsRefetch {
  all: boolean
  eventIds: string[]
  calendarIds: string[]
  connectionIds: string[]
}

export type StreamStatus =
  | { state: 'open', connection: number, renewal: boolean }
  | { state: 'retrying', reason: 'dropped' | 'failed', inMs: number, error?: Error }
  | { state: 'closed', reason: 'closed' | 'sessionEnded' }

export interface StreamHandlers {
  /** Every message, before its own handler. */
  onMessage?: (message: ServerMessage) => void
  /** eventsChanged: invalidate and refetch the matching event queries. */
  onEventsChanged?: (refetch: EventsRefetch, message: EventsChangedMessage) => void
  /** calendarsChanged: refetch the calendar list. */
  onCalendarsChanged?: (message: CalendarsChangedMessage) => void
  /** syncStatusChanged: update the connection's status (syncing, healthy, attention). */
  onSyncStatus?: (message: SyncStatusChangedMessage) => void
  /**
   * A provider grant was revoked: mark the connection revoked and offer reconnect
   * (POST /api/auth/connections/begin, or a new app password for CalDAV). Called once per
   * revocation, whether it came as CONNECTION_REVOKED, its legacy alias, or in a replay.
   */
  onConnectionRevoked?: (connection: { connectionId: string, provider: Provider | undefined }) => void
  /** importCompleted: update the import status (the events themselves come with eventsChanged). */
  onImportCompleted?: (message: ImportCompletedMessage) => void
  /** userMetadataChanged (the first message of every stream): replace the user metadata store. */
  onUserMetadata?: (message: UserMetadataChangedMessage) => void
  onStatus?: (status: StreamStatus) => void
}

export interface StreamOptions {
  /** The server's planned lifetime of a stream (20 minutes); the client renews before it. */
  plannedLifetimeMs?: number
  /** How long before the planned end (or the token's expiry) a fresh stream is opened. */
  renewBeforeMs?: number
  /** The longest wait between two attempts while the backend does not answer. */
  maxRetryMs?: number
}

export const STREAM_DEFAULTS = {
  plannedLifetimeMs: 20 * 60_000,
  renewBeforeMs: 30_000,
  maxRetryMs: 30_000,
  /** Until the server's own `retry:` line arrives (it sends 5000). */
  retryMs: 5000
} as const

interface Connection {
  id: number
  abort: AbortController
  /** When the access token it was opened with expires; the server ends the stream then. */
  tokenExpiresAt: number | null
  renewTimer?: ReturnType<typeof setTimeout>
}

function isRevocation (message: SyncStatusChangedMessage): boolean {
  return message.status === 'attention' && (message.code === REVOKED || message.code === LEGACY_REVOKED || message.aliasOf === REVOKED)
}

export class EventStream {
  readonly #client: StreamSession
  readonly #handlers: StreamHandlers
  readonly #options: Required<StreamOptions>
  #retryMs: number = STREAM_DEFAULTS.retryMs
  #failures = 0
  #nextId = 1
  #current: Connection | undefined
  #connecting = false
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #closed = false
  /** Connections whose revocation was reported, until they are seen healthy again. */
  readonly #revoked = new Set<string>()

  constructor (client: StreamSession, handlers: StreamHandlers, options: StreamOptions = {}) {
    this.#client = client
    this.#handlers = handlers
    this.#options = {
      plannedLifetimeMs: options.plannedLifetimeMs ?? STREAM_DEFAULTS.plannedLifetimeMs,
      renewBeforeMs: options.renewBeforeMs ?? STREAM_DEFAULTS.renewBeforeMs,
      maxRetryMs: options.maxRetryMs ?? STREAM_DEFAULTS.maxRetryMs
    }
  }

  /** How many streams were opened so far (the first, reconnects and renewals). */
  get connectionsOpened (): number {
    return this.#nextId - 1
  }

  get isOpen (): boolean {
    return this.#current !== undefined
  }

  start (): void {
    this.#connect(0)
  }

  close (): void {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#retryTimer)
    this.#drop(this.#current)
    this.#current = undefined
    this.#handlers.onStatus?.({ state: 'closed', reason: 'closed' })
  }

  /** Opens a stream; `validForMs`: how long its access token must still be valid (renewals). */
  async #connect (validForMs: number): Promise<void> {
    if (this.#closed || this.#connecting) return
    this.#connecting = true
    const connection: Connection = { id: this.#nextId++, abort: new AbortController(), tokenExpiresAt: null }
    try {
      let token = await this.#client.accessToken(validForMs)
      let response = await this.#client.openStream(token, connection.abort.signal)
      if (response.status === 401) {
        // Expired in flight, or the session ended: one refresh, then once more.
        await response.text()
        token = await this.#client.tokenAfterUnauthorized(token)
        response = await this.#client.openStream(token, connection.abort.signal)
        if (response.status === 401) {
          await response.text()
          throw await this.#client.sessionRefused()
        }
      }
      if (response.status !== 200 || response.body === null) {
        throw this.#client.failureOf(response, await response.text())
      }
      if (this.#closed) {
        connection.abort.abort()
        return
      }
      connection.tokenExpiresAt = await this.#client.accessTokenExpiresAt()
      this.#attach(connection)
      this.#read(connection, response.body)
    } catch (error) {
      this.#failed(error)
    } finally {
      this.#connecting = false
    }
  }

  #attach (connection: Connection): void {
    const previous = this.#current
    this.#current = connection
    this.#failures = 0
    // The new stream is registered at the server once its answer has begun: the old one can go.
    if (previous !== undefined) this.#drop(previous)
    this.#scheduleRenewal(connection)
    this.#handlers.onStatus?.({ state: 'open', connection: connection.id, renewal: previous !== undefined })
  }

  #scheduleRenewal (connection: Connection): void {
    const openedAt = Date.now()
    const plannedEnd = openedAt + this.#options.plannedLifetimeMs
    const end = connection.tokenExpiresAt === null ? plannedEnd : Math.min(plannedEnd, connection.tokenExpiresAt)
    // Short lifetimes (tests, short tokens) renew halfway rather than before they began.
    const margin = Math.min(this.#options.renewBeforeMs, Math.max(0, end - openedAt) / 2)
    connection.renewTimer = setTimeout(() => {
      if (this.#current !== connection || this.#closed) return
      // The token must outlive the margin twice over, or the new stream would end as early.
      this.#connect(margin * 2)
    }, Math.max(0, end - margin - openedAt))
  }

  async #read (connection: Connection, body: ReadableStream<Uint8Array>): Promise<void> {
    const parser = createParser({
      onRetry: (ms) => { this.#retryMs = ms },
      onEvent: (event) => {
        if (this.#current !== connection) return
        try {
          this.#receive(event)
        } catch (error) {
          // A handler's own failure is the app's, not the stream's: it surfaces as an uncaught
          // error, as an EventSource listener's would, and the stream reads on.
          setTimeout(() => { throw error })
        }
      }
    })
    const reader = body.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        parser.feed(decoder.decode(value, { stream: true }))
      }
    } catch {
      // Aborted here, or the connection broke: both end this stream alike.
    }
    this.#ended(connection)
  }

  #ended (connection: Connection): void {
    clearTimeout(connection.renewTimer)
    if (this.#current !== connection || this.#closed) return
    this.#current = undefined
    this.#retryLater('dropped', this.#retryMs)
  }

  #failed (error: unknown): void {
    if (error instanceof SessionEndedError) {
      this.#closed = true
      this.#drop(this.#current)
      this.#current = undefined
      this.#handlers.onStatus?.({ state: 'closed', reason: 'sessionEnded' })
      return
    }
    // A failed renewal leaves the old stream running; its end will reconnect.
    if (this.#current !== undefined || this.#closed) return
    const hint = error instanceof UnavailableError ? error.retryAfterMs : null
    const delay = backoffDelay(this.#failures, { baseMs: this.#retryMs, capMs: this.#options.maxRetryMs, jitter: 'equal' })
    this.#failures++
    this.#retryLater('failed', Math.max(delay, hint ?? 0), error instanceof Error ? error : new Error(String(error)))
  }

  #retryLater (reason: 'dropped' | 'failed', inMs: number, error?: Error): void {
    clearTimeout(this.#retryTimer)
    this.#handlers.onStatus?.({ state: 'retrying', reason, inMs, ...(error === undefined ? {} : { error }) })
    this.#retryTimer = setTimeout(() => {
      // A renewal that was under way when the stream dropped may have taken its place already.
      if (this.#current === undefined) this.#connect(0)
    }, inMs)
  }

  #drop (connection: Connection | undefined): void {
    if (connection === undefined) return
    clearTimeout(connection.renewTimer)
    connection.abort.abort()
  }

  #receive (event: EventSourceMessage): void {
    // The stream has one event name, `message`; anything else is not for this client.
    if (event.event !== undefined && event.event !== 'message') return
    let message: ServerMessage
    try {
      message = JSON.parse(event.data) as ServerMessage
    } catch {
      return
    }
    this.#handlers.onMessage?.(message)
    switch (message.type) {
      case 'eventsChanged':
        this.#handlers.onEventsChanged?.({
          all: message.refetchAll || (message.eventIds === undefined && message.calendarIds === undefined && message.connectionIds === undefined),
          eventIds: message.eventIds ?? [],
          calendarIds: message.calendarIds ?? [],
          connectionIds: message.connectionIds ?? []
        }, message)
        break
      case 'calendarsChanged':
        this.#handlers.onCalendarsChanged?.(message)
        break
      case 'syncStatusChanged':
        this.#handlers.onSyncStatus?.(message)
        if (isRevocation(message)) this.#revocation(message.connectionId, message.provider)
        else this.#revoked.delete(message.connectionId)
        break
      case 'importCompleted':
        this.#revoked.delete(message.connectionId)
        this.#handlers.onImportCompleted?.(message)
        break
      case 'userMetadataChanged':
        this.#handlers.onUserMetadata?.(message)
        for (const summary of message.sync?.connections ?? []) {
          if (summary.state === 'actionRequired' && summary.reason === 'authorizationRevoked') this.#revocation(summary.connectionId, summary.provider)
          else this.#revoked.delete(summary.connectionId)
        }
        break
    }
  }

  #revocation (connectionId: string, provider: Provider | undefined): void {
    if (this.#revoked.has(connectionId)) return
    this.#revoked.add(connectionId)
    this.#handlers.onConnectionRevoked?.({ connectionId, provider })
  }
}
