// The backend's client for the Sync service's internal API. Every request is signed with
// lib/internal-auth.ts and every answer is checked against the shared contracts in schemas/sync/,
// so the two services cannot drift apart silently.
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import type { TSchema, Static } from '@sinclair/typebox'
import { signInternalRequest } from '../lib/internal-auth.js'
import {
  SyncBeginConnectionResponseSchema, CalDavConnectResponseSchema, ChangesBatchResponseSchema, ChangesPageSchema, CredentialHandOverResultSchema, EventChangeAcceptedSchema,
  RestartSyncResponseSchema, StopWatchesResponseSchema, SyncCalendarListSchema, SyncErrorBodySchema, SyncHealthSchema, SyncMetadataSchema, SYNC_PATHS
} from '../schemas/sync/index.js'
import type {
  BeginConnectionRequest, SyncBeginConnectionResponse, CalDavConnectRequest, CalDavConnectResponse, ChangesPage, CredentialHandOver, CredentialHandOverResult, CursorRequest, EventChangeAccepted,
  EventChangeReport, RestartSyncResponse, StopWatchesResponse, SyncCalendarList, SyncErrorCode, SyncHealth, SyncMetadata
} from '../schemas/sync/index.js'
import { requestIdHeaders } from '../lib/request-id.js'

/** The Sync service could not be reached, or answered with a 5xx that is not a typed refusal. */
export class SyncUnavailableError extends Error {
  override name = 'SyncUnavailableError'
  readonly statusCode: number | null
  readonly code: string | null

  constructor (message: string, options: { statusCode?: number | null, code?: string | null, cause?: unknown } = {}) {
    super(message, { cause: options.cause })
    this.statusCode = options.statusCode ?? null
    this.code = options.code ?? null
  }
}

/**
 * The Sync service answered and refused: every 4xx, and 503 `MAINTENANCE` (a deliberate, typed
 * refusal the backend passes on to its own client rather than retrying).
 */
export class SyncRequestError extends Error {
  override name = 'SyncRequestError'
  readonly statusCode: number
  readonly code: SyncErrorCode | 'UNEXPECTED_RESPONSE'
  readonly connectionId: string | null

  constructor (statusCode: number, code: SyncErrorCode | 'UNEXPECTED_RESPONSE', message: string, connectionId: string | null = null) {
    super(message)
    this.statusCode = statusCode
    this.code = code
    this.connectionId = connectionId
  }
}

export interface SyncClientOptions {
  /** sync.serviceUrl; may carry a path prefix. */
  baseUrl: string
  /** sync.internalAuthToken */
  internalAuthToken: string
  /** Keep-alive sockets to the Sync service. */
  connections?: number
  /**
   * Sockets of the calls that make Sync reach a server a user named (a CalDAV connect), which may
   * wait on a silent server for seconds: a pool of their own, so they never hold the sockets of
   * the reads and reports everyone else waits on.
   */
  outwardConnections?: number
  /** Limit for headers and for the body of one answer. */
  timeoutMs?: number
  /**
   * The shorter limit of the reads a person waits on (their calendars, their sync status), so a
   * Sync that hangs costs them a 503 after this, not after `timeoutMs`. Default READ_DEADLINE_MS.
   */
  readTimeoutMs?: number
  /** Clock used for signature timestamps. */
  now?: () => number
}

const checkers = {
  page: TypeCompiler.Compile(ChangesPageSchema),
  batch: TypeCompiler.Compile(ChangesBatchResponseSchema),
  accepted: TypeCompiler.Compile(EventChangeAcceptedSchema),
  metadata: TypeCompiler.Compile(SyncMetadataSchema),
  calendars: TypeCompiler.Compile(SyncCalendarListSchema),
  begin: TypeCompiler.Compile(SyncBeginConnectionResponseSchema),
  caldav: TypeCompiler.Compile(CalDavConnectResponseSchema),
  stopped: TypeCompiler.Compile(StopWatchesResponseSchema),
  restarted: TypeCompiler.Compile(RestartSyncResponseSchema),
  handedOver: TypeCompiler.Compile(CredentialHandOverResultSchema),
  health: TypeCompiler.Compile(SyncHealthSchema),
  error: TypeCompiler.Compile(SyncErrorBodySchema)
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    // A proxy's HTML error page or an empty body: the status decides what the caller sees.
    return undefined
  }
}

/**
 * Twice the Sync service's own database deadline on a request's path (2.5 s): a Sync whose database
 * hangs answers its 503 within it; a Sync that hangs itself is given up on after it.
 */
export const READ_DEADLINE_MS = 5_000

export class SyncClient {
  readonly #pool: Pool
  readonly #outwardPool: Pool
  readonly #prefix: string
  readonly #secret: string
  readonly #timeoutMs: number
  readonly #readTimeoutMs: number
  readonly #now: () => number

  constructor (options: SyncClientOptions) {
    const base = new URL(options.baseUrl)
    this.#prefix = base.pathname.replace(/\/+$/, '')
    this.#secret = options.internalAuthToken
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#readTimeoutMs = Math.min(options.readTimeoutMs ?? READ_DEADLINE_MS, this.#timeoutMs)
    this.#now = options.now ?? Date.now
    this.#pool = new Pool(base.origin, {
      connections: options.connections ?? 16,
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs
    })
    this.#outwardPool = new Pool(base.origin, {
      connections: options.outwardConnections ?? 8,
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs
    })
  }

  /** One user's invalidations after `cursor`; a null cursor asks for a watermark ("from now"). */
  async changes (userId: string, cursor: string | null, options: { limit?: number } = {}): Promise<ChangesPage> {
    const query = new URLSearchParams({ userId })
    if (cursor !== null) query.set('cursor', cursor)
    if (options.limit !== undefined) query.set('limit', String(options.limit))
    return await this.#call('GET', `${SYNC_PATHS.changes}?${query.toString()}`, userId, undefined, checkers.page)
  }

  /** Many users' cursors in one request; pages come back in request order. */
  /**
   * Many users' pages in one request. With `waitMs`, Sync holds an all-empty answer until a change
   * of one of them lands or the time is up; `signal` gives up on the request.
   */
  async changesBatch (cursors: CursorRequest[], options: { limit?: number, waitMs?: number, signal?: AbortSignal } = {}): Promise<ChangesPage[]> {
    const { limit, waitMs = 0, signal } = options
    const body = { users: cursors, ...(limit === undefined ? {} : { limit }), ...(waitMs > 0 ? { waitMs } : {}) }
    const answer = await this.#call('POST', SYNC_PATHS.changesBatch, null, body, checkers.batch, { timeoutMs: this.#timeoutMs + waitMs, signal })
    return answer.pages
  }

  /** Tells Sync of an own-data event change; rejects with SyncRequestError 410/503 for revoked/maintenance. */
  async reportEventChange (report: EventChangeReport): Promise<EventChangeAccepted> {
    return await this.#call('POST', SYNC_PATHS.eventChanges, report.userId, report, checkers.accepted)
  }

  async metadata (userId: string): Promise<SyncMetadata> {
    return await this.#call('GET', SYNC_PATHS.metadata(userId), userId, undefined, checkers.metadata, { timeoutMs: this.#readTimeoutMs })
  }

  /** The provider calendars Sync keeps for the user (names, colours, primary). */
  async calendars (userId: string): Promise<SyncCalendarList> {
    return await this.#call('GET', SYNC_PATHS.calendars(userId), userId, undefined, checkers.calendars, { timeoutMs: this.#readTimeoutMs })
  }

  async beginConnection (userId: string, request: BeginConnectionRequest): Promise<SyncBeginConnectionResponse> {
    return await this.#call('POST', SYNC_PATHS.beginConnection(userId), userId, request, checkers.begin)
  }

  /** Connects (or repairs) a CalDAV account; Sync checks the password at the server before storing it. */
  async connectCalDav (userId: string, request: CalDavConnectRequest): Promise<CalDavConnectResponse> {
    return await this.#call('POST', SYNC_PATHS.connectCalDav(userId), userId, request, checkers.caldav, { pool: this.#outwardPool })
  }

  async stopWatches (userId: string): Promise<StopWatchesResponse> {
    return await this.#call('POST', SYNC_PATHS.stopWatches(userId), userId, {}, checkers.stopped)
  }

  async restartSync (userId: string): Promise<RestartSyncResponse> {
    return await this.#call('POST', SYNC_PATHS.restartSync(userId), userId, {}, checkers.restarted)
  }

  /** Hands a provider credential to Sync, which stores it encrypted and creates or repairs the connection per the mode. */
  async handOverCredential (userId: string, handOver: CredentialHandOver): Promise<CredentialHandOverResult> {
    return await this.#call('POST', SYNC_PATHS.credentials(userId), userId, handOver, checkers.handedOver)
  }

  /** Readiness of the Sync service (its database answers); unsigned like any health probe. */
  async ready (): Promise<SyncHealth> {
    return await this.#call('GET', '/health/ready', null, undefined, checkers.health, { sign: false })
  }

  async close (): Promise<void> {
    await Promise.all([this.#pool.close(), this.#outwardPool.close()])
  }

  async #call<T extends TSchema> (
    method: 'GET' | 'POST',
    pathAndQuery: string,
    userId: string | null,
    body: unknown,
    checker: TypeCheck<T>,
    { sign = true, timeoutMs = this.#timeoutMs, pool = this.#pool, signal }: { sign?: boolean, timeoutMs?: number, pool?: Pool, signal?: AbortSignal } = {}
  ): Promise<Static<T>> {
    const path = this.#prefix + pathAndQuery
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const headers: Record<string, string> = { accept: 'application/json', ...requestIdHeaders() }
    if (payload !== undefined) headers['content-type'] = 'application/json'
    if (sign) Object.assign(headers, signInternalRequest({ secret: this.#secret, method, path, body: payload, userId }, this.#now()))

    let response: Dispatcher.ResponseData
    let text: string
    try {
      response = await pool.request({ method, path, headers, body: payload, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal })
      text = await response.body.text()
    } catch (error) {
      throw new SyncUnavailableError(`Sync service request ${method} ${pathAndQuery.split('?')[0]} failed`, { cause: error })
    }
    const parsed = parseJson(text)

    const status = response.statusCode
    if (status >= 200 && status < 300) {
      if (checker.Check(parsed)) return parsed
      throw new SyncUnavailableError(`Sync service answered ${method} ${pathAndQuery.split('?')[0]} with a body outside the contract`, { statusCode: status })
    }
    const typed = checkers.error.Check(parsed) ? parsed : null
    // Sync refusing this backend's own signature (another internal auth token, or clocks more than
    // five minutes apart) is the deployment's fault, never the person's: passed on as a 401, a client
    // would take it for a lost session and sign its user out.
    if (status === 401 || status === 403) {
      throw new SyncUnavailableError(`Sync service refused the backend's internal signature (${status}): the internal auth tokens or the two hosts' clocks differ`, { statusCode: status, code: typed?.code ?? null })
    }
    if (status >= 500 && typed?.code !== 'MAINTENANCE') {
      throw new SyncUnavailableError(`Sync service answered ${status}`, { statusCode: status, code: typed?.code ?? null })
    }
    if (typed) throw new SyncRequestError(status, typed.code, typed.message, typed.connectionId ?? null)
    throw new SyncRequestError(status, 'UNEXPECTED_RESPONSE', `Sync service answered ${status} without a typed error body`)
  }
}
