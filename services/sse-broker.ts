import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyBaseLogger } from 'fastify'
import {
  serverMessageCheck,
  type CalendarsChangedMessage,
  type EventsChangedMessage,
  type ImportCompletedMessage,
  type ServerMessage,
  type SyncStatusChangedMessage,
  type UserMetadataChangedMessage
} from '../schemas/server-message.js'

export interface SseBrokerOptions {
  /** Comment heartbeats keep proxies from closing an idle stream; 15 s stays below the 30 s idle
   * timeout of the strictest common proxies and load balancers (60 s for nginx and AWS ALB). */
  heartbeatIntervalMs: number
  /** Planned lifetime of a stream; the client then reconnects with a fresh token. */
  lifetimeMs: number
  /** Output a stream may hold unsent before its client is considered stalled and cut off. */
  maxPendingBytes: number
  /** The `retry:` hint written first on every stream. */
  retryMs: number
  /**
   * Open streams of one user in this process (tabs and devices); one more closes the user's
   * oldest, which is most likely a tab or device that went away without closing its connection.
   */
  maxStreamsPerUser: number
}

export const defaultSseBrokerOptions: SseBrokerOptions = {
  heartbeatIntervalMs: 15_000,
  lifetimeMs: 20 * 60_000,
  maxPendingBytes: 128 * 1024,
  retryMs: 5000,
  maxStreamsPerUser: 20
}

export interface OpenStreamOptions {
  userId: string
  /** The session the stream was opened with; closeSession(handle) ends it on logout. */
  sessionHandle?: string | undefined
  /** Headers already decided for this response (CORS, security headers). */
  headers?: Record<string, string | number | string[] | undefined>
  /** Ends the stream earlier than the planned lifetime, for example when its access token expires. */
  lifetimeMs?: number
  /**
   * The stream's first message is a replay (`replay`): messages published to it before then wait
   * for it, so a client sees the state first and the changes after it, whatever the order they came in.
   */
  replayFirst?: boolean
}

export type StreamCloseReason = 'client' | 'lifetime' | 'session' | 'user' | 'slow' | 'error' | 'shutdown' | 'displaced'

type Release = (stream: SseStream, reason: StreamCloseReason, error?: unknown) => void

export class SseStream {
  closeReason: StreamCloseReason | undefined
  /** Frames published before the replay of a `replayFirst` stream, written right after it. */
  waiting: string[] | undefined
  constructor (
    readonly id: number,
    readonly userId: string,
    readonly sessionHandle: string | undefined,
    readonly res: ServerResponse,
    readonly expiresAt: number,
    readonly release: Release
  ) {}

  get closed (): boolean {
    return this.closeReason !== undefined
  }
}

// Tens of thousands of idle streams are the normal load, so per-stream memory counts: the response
// points at its stream, and the same two listener functions serve every response (no closure, no
// timer per stream).
const streamKey = Symbol('sseStream')
type StreamResponse = ServerResponse & { [streamKey]?: SseStream }

function onResponseClose (this: StreamResponse): void {
  const stream = this[streamKey]
  stream?.release(stream, 'client')
}

function onResponseError (this: StreamResponse, error: Error): void {
  const stream = this[streamKey]
  stream?.release(stream, 'error', error)
}

type PayloadOf<M> = M extends unknown ? Omit<M, 'type'> : never
type UserListener = (userId: string) => void

const sseHeaders: OutgoingHttpHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  // no-transform keeps compressing proxies from holding frames back
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // nginx and compatible proxies stream the response instead of buffering it
  'x-accel-buffering': 'no'
}

const keepaliveFrame = ': keepalive\n\n'
/**
 * Messages a stream keeps while its replay is read (a few milliseconds, at most the Sync and
 * session reads' deadlines): past this the stream is cut off and its client reconnects.
 */
const MAX_FRAMES_BEFORE_REPLAY = 64

/** The known keys of `defaults`, each overridden when `given` has a value for it. */
export function pickOptions<T extends object> (defaults: T, given: Partial<T> | undefined): T {
  const picked = { ...defaults }
  for (const key of Object.keys(defaults) as Array<keyof T>) {
    const value = given?.[key]
    if (value !== undefined) picked[key] = value as T[keyof T]
  }
  return picked
}

/** Serialises a message as one SSE event named `message`. JSON never contains a raw newline. */
export function encodeFrame (message: ServerMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`
}

export class SseBroker {
  options: SseBrokerOptions
  readonly #log: FastifyBaseLogger
  readonly #byUser = new Map<string, Set<SseStream>>()
  readonly #bySession = new Map<string, Set<SseStream>>()
  readonly #activeListeners: UserListener[] = []
  readonly #idleListeners: UserListener[] = []
  #heartbeat: NodeJS.Timeout | undefined
  #sweep: NodeJS.Timeout | undefined
  readonly #release: Release = (stream, reason, error) => {
    if (reason === 'error') {
      this.#log.debug({ err: error, streamId: stream.id }, 'event stream write failed')
      this.#end(stream, reason)
    } else {
      this.#forget(stream, reason)
    }
  }

  #streamCount = 0
  #nextId = 1
  #closing = false

  constructor (log: FastifyBaseLogger, options: Partial<SseBrokerOptions> = {}) {
    this.options = pickOptions(defaultSseBrokerOptions, options)
    this.#log = log
  }

  /** Changes settings for streams opened from now on (and the heartbeat interval at once). */
  configure (options: Partial<SseBrokerOptions>): void {
    this.options = pickOptions(this.options, options)
    if (this.#heartbeat !== undefined) {
      this.#stopTimers()
      this.#startTimers()
    }
  }

  get streamCount (): number {
    return this.#streamCount
  }

  get userCount (): number {
    return this.#byUser.size
  }

  /** Users with at least one open stream. */
  users (): IterableIterator<string> {
    return this.#byUser.keys()
  }

  streamsOf (userId: string): number {
    return this.#byUser.get(userId)?.size ?? 0
  }

  /** Called when a user's first stream opens. */
  onUserActive (listener: UserListener): void {
    this.#activeListeners.push(listener)
  }

  /** Called when a user's last stream closes. */
  onUserIdle (listener: UserListener): void {
    this.#idleListeners.push(listener)
  }

  /**
   * Starts the SSE response on `res` (the caller has taken it over from the framework), writes the
   * retry hint and registers the stream under its user. Returns undefined when the broker is
   * shutting down or the client already went away; the response is then ended.
   */
  open (res: ServerResponse, options: OpenStreamOptions): SseStream | undefined {
    if (this.#closing || res.destroyed) {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', connection: 'close' })
      }
      res.end(this.#closing ? '{"statusCode":503,"error":"Service Unavailable","message":"Shutting down"}' : undefined)
      return undefined
    }
    const headers: OutgoingHttpHeaders = {}
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) headers[name] = value
    }
    res.writeHead(200, { ...headers, ...sseHeaders })
    res.write(`retry: ${this.options.retryMs}\n\n`)

    const lifetimeMs = Math.max(0, Math.min(options.lifetimeMs ?? this.options.lifetimeMs, this.options.lifetimeMs))
    const stream = new SseStream(this.#nextId++, options.userId, options.sessionHandle, res, Date.now() + lifetimeMs, this.#release)
    if (options.replayFirst === true) stream.waiting = []
    const streamResponse: StreamResponse = res
    streamResponse[streamKey] = stream
    res.on('close', onResponseClose)
    res.on('error', onResponseError)

    let userStreams = this.#byUser.get(stream.userId)
    const firstOfUser = userStreams === undefined
    if (userStreams === undefined) {
      userStreams = new Set()
      this.#byUser.set(stream.userId, userStreams)
    }
    userStreams.add(stream)
    if (userStreams.size > this.options.maxStreamsPerUser) {
      // A Set iterates in insertion order: the first is the oldest.
      const oldest = userStreams.values().next().value
      if (oldest !== undefined && oldest !== stream) {
        this.#log.info({ streamId: oldest.id, userId: stream.userId, maxStreamsPerUser: this.options.maxStreamsPerUser }, 'event stream displaced by a newer one of the same user')
        this.#end(oldest, 'displaced')
      }
    }
    if (stream.sessionHandle !== undefined) {
      let sessionStreams = this.#bySession.get(stream.sessionHandle)
      if (sessionStreams === undefined) {
        sessionStreams = new Set()
        this.#bySession.set(stream.sessionHandle, sessionStreams)
      }
      sessionStreams.add(stream)
    }
    this.#streamCount++
    this.#startTimers()
    if (firstOfUser) this.#notify(this.#activeListeners, stream.userId)
    return stream
  }

  /**
   * Writes the replay after connect to one stream, then what was published to it meanwhile; with
   * no message (the replay could not be made), only that.
   */
  replay (stream: SseStream, message: ServerMessage | undefined): boolean {
    const waiting = stream.waiting ?? []
    stream.waiting = undefined
    const frame = message === undefined ? undefined : this.#frame(message)
    if (stream.closed) return false
    const written = frame !== undefined && this.#write(stream, frame)
    for (const held of waiting) if (!this.#write(stream, held)) break
    return written
  }

  /** Fans one message out to every open stream of the user; returns how many streams got it. */
  publish (userId: string, message: ServerMessage): number {
    const streams = this.#byUser.get(userId)
    if (streams === undefined) return 0
    const frame = this.#frame(message)
    if (frame === undefined) return 0
    let written = 0
    // A write may cut a stream off and delete it from the set; a Set keeps iterating correctly
    // past deletions, so no copy of a possibly large set is made per message.
    for (const stream of streams) {
      if (stream.waiting === undefined ? this.#write(stream, frame) : this.#hold(stream, frame)) written++
    }
    return written
  }

  /** Keeps a frame for a stream whose replay has not been written yet; one that waits too long for it is cut off. */
  #hold (stream: SseStream, frame: string): boolean {
    if (stream.closed || stream.waiting === undefined) return false
    if (stream.waiting.length >= MAX_FRAMES_BEFORE_REPLAY) {
      this.#end(stream, 'slow')
      return false
    }
    stream.waiting.push(frame)
    return true
  }

  publishEventsChanged (userId: string, payload: PayloadOf<EventsChangedMessage>): number {
    return this.publish(userId, { ...payload, type: 'eventsChanged' })
  }

  publishCalendarsChanged (userId: string, payload: PayloadOf<CalendarsChangedMessage>): number {
    return this.publish(userId, { ...payload, type: 'calendarsChanged' })
  }

  publishSyncStatusChanged (userId: string, payload: PayloadOf<SyncStatusChangedMessage>): number {
    return this.publish(userId, { ...payload, type: 'syncStatusChanged' } as SyncStatusChangedMessage)
  }

  publishImportCompleted (userId: string, payload: PayloadOf<ImportCompletedMessage>): number {
    return this.publish(userId, { ...payload, type: 'importCompleted' })
  }

  publishUserMetadataChanged (userId: string, payload: PayloadOf<UserMetadataChangedMessage>): number {
    return this.publish(userId, { ...payload, type: 'userMetadataChanged' })
  }

  /** Ends every stream opened with this session (logout, revocation); returns how many. */
  closeSession (sessionHandle: string): number {
    return this.#endEach(this.#bySession.get(sessionHandle), 'session')
  }

  /** Ends every stream of a user; returns how many. */
  closeUser (userId: string): number {
    return this.#endEach(this.#byUser.get(userId), 'user')
  }

  /** Ends the streams of a set that ending them shrinks, so it is copied first. */
  #endEach (streams: Set<SseStream> | undefined, reason: StreamCloseReason): number {
    const toClose = [...streams ?? []]
    for (const stream of toClose) this.#end(stream, reason)
    return toClose.length
  }

  /** Ends every stream and refuses new ones (shutdown). */
  closeAll (): void {
    this.#closing = true
    for (const streams of [...this.#byUser.values()]) {
      for (const stream of [...streams]) this.#end(stream, 'shutdown')
    }
    this.#stopTimers()
  }

  #frame (message: ServerMessage): string | undefined {
    if (!serverMessageCheck.Check(message)) {
      const error = serverMessageCheck.Errors(message).First()
      const candidate: unknown = message
      const type = typeof candidate === 'object' && candidate !== null && 'type' in candidate && typeof candidate.type === 'string' ? candidate.type : undefined
      this.#log.error({ messageType: type, path: error?.path, reason: error?.message }, 'server message failed its schema and was not written')
      return undefined
    }
    return encodeFrame(message)
  }

  #write (stream: SseStream, chunk: string): boolean {
    const res = stream.res
    if (stream.closed || res.destroyed || res.writableEnded) return false
    // Node's http layer corks the socket for the rest of the tick on every write, so output written
    // in this tick always looks pending; what is still pending from earlier ticks is what the client
    // has not read.
    if (res.writableLength > this.options.maxPendingBytes) {
      this.#log.warn({ streamId: stream.id, userId: stream.userId, pendingBytes: res.writableLength }, 'event stream client stopped reading; stream cut off')
      this.#forget(stream, 'slow')
      res.destroy()
      return false
    }
    res.write(chunk)
    return true
  }

  #end (stream: SseStream, reason: StreamCloseReason): void {
    if (stream.closed) return
    this.#forget(stream, reason)
    stream.res.end()
  }

  #forget (stream: SseStream, reason: StreamCloseReason): void {
    if (stream.closed) return
    stream.closeReason = reason
    this.#streamCount--
    const userStreams = this.#byUser.get(stream.userId)
    if (userStreams !== undefined) {
      userStreams.delete(stream)
      if (userStreams.size === 0) {
        this.#byUser.delete(stream.userId)
        this.#notify(this.#idleListeners, stream.userId)
      }
    }
    if (stream.sessionHandle !== undefined) {
      const sessionStreams = this.#bySession.get(stream.sessionHandle)
      sessionStreams?.delete(stream)
      if (sessionStreams?.size === 0) this.#bySession.delete(stream.sessionHandle)
    }
    if (this.#streamCount === 0) this.#stopTimers()
    this.#log.debug({ streamId: stream.id, userId: stream.userId, reason }, 'event stream closed')
  }

  #notify (listeners: UserListener[], userId: string): void {
    for (const listener of listeners) {
      try {
        listener(userId)
      } catch (error) {
        this.#log.error({ err: error, userId }, 'event stream listener failed')
      }
    }
  }

  #startTimers (): void {
    if (this.#heartbeat !== undefined) return
    this.#heartbeat = setInterval(() => {
      for (const streams of this.#byUser.values()) {
        for (const stream of streams) this.#write(stream, keepaliveFrame)
      }
    }, this.options.heartbeatIntervalMs)
    this.#heartbeat.unref()
    // One sweep ends the streams past their planned lifetime; a stream lives at most one sweep
    // interval (at most 1 s) longer than planned.
    const sweepMs = Math.max(10, Math.min(1000, Math.floor(this.options.lifetimeMs / 4)))
    this.#sweep = setInterval(() => {
      const now = Date.now()
      for (const streams of this.#byUser.values()) {
        for (const stream of streams) {
          if (stream.expiresAt <= now) this.#end(stream, 'lifetime')
        }
      }
    }, sweepMs)
    this.#sweep.unref()
  }

  #stopTimers (): void {
    clearInterval(this.#heartbeat)
    clearInterval(this.#sweep)
    this.#heartbeat = undefined
    this.#sweep = undefined
  }
}

export interface RealtimePluginOptions {
  realtime?: Partial<SseBrokerOptions>
}
