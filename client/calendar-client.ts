// A client of the calendar backend for native apps and Node: header-mode sessions (no cookies),
// typed event reads and writes, and the event stream (stream.ts). It needs a `fetch` and nothing
// of the DOM: Node 20+ has one, React Native has one (a streaming one for the event stream).
import { retryAfterMs } from '../lib/backoff.js'
import { mintEventId } from '../lib/events/ids.js'
import type { Static } from '@sinclair/typebox'
import type { ErrorResponse } from '../schemas/errors.js'
import type { FieldErrorResponse } from '../schemas/session-library.js'
import type { EventApplyTo, EventChangeInput, EventView, ImportResultBody, SearchResultsView } from '../schemas/event.js'
import type { UserProfile } from '../schemas/user.js'
import type { UserPreferences } from '../schemas/preferences.js'
import { ApiError, SessionEndedError, UnavailableError } from './errors.js'
import type { FetchLike, FetchResponse } from './fetch.js'
import { MemoryTokenStore, needsRefresh, readFrontToken, type SessionTokens, type TokenStore } from './tokens.js'
import { EventStream, type StreamHandlers, type StreamOptions } from './stream.js'

export interface CalendarClientOptions {
  /** The backend's API base, ending in `/api` (`backend.apiUrl`), for example http://localhost:3000/api. */
  apiUrl: string
  /** Where the session's tokens are kept; in memory when not given. */
  tokenStore?: TokenStore
  fetch?: FetchLike
  /**
   * Called once when the session has ended for good (the refresh token was refused): show the
   * sign-in screen. Calls that needed the session reject with SessionEndedError.
   */
  onReauthRequired?: (reason: SessionEndedError['reason']) => void | Promise<void>
  /** The clock the front token's expiry is compared with; tests pass their own. */
  now?: () => number
}

export interface Credentials {
  email: string
  password: string
}

export interface SignUpFields extends Credentials {
  name: string
}

/**
 * The session library's answer to sign-in and sign-up, as this service configures it: OK with the
 * user, wrong credentials (the same answer whether or not the email has an account), or field
 * errors (a malformed email, a blank name, an email taken at sign-up).
 */
export type AuthResult =
  | { status: 'OK', userId: string }
  | { status: 'WRONG_CREDENTIALS_ERROR' }
  | { status: 'FIELD_ERROR', fields: FieldErrorBody['formFields'] }
  | { status: 'NOT_ALLOWED', reason: string }

export interface EventRange {
  /** RFC 3339 with an offset, inclusive. */
  start: string
  /** RFC 3339 with an offset, exclusive; at most 400 days after `start`. */
  end: string
}

type FieldErrorBody = Static<typeof FieldErrorResponse>

const AUTH_MODE = { 'sx-auth-mode': 'header' }
const TOKEN_HEADERS = { access: 'sx-access-token', refresh: 'sx-refresh-token', front: 'front-token' } as const

function parseBody (text: string): unknown {
  if (text === '') return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function errorFields (body: unknown): { code?: string, message?: string } {
  return typeof body === 'object' && body !== null ? body as Partial<ErrorResponse> : {}
}

export class CalendarClient {
  readonly apiUrl: string
  readonly #store: TokenStore
  readonly #fetch: FetchLike
  readonly #onReauthRequired: CalendarClientOptions['onReauthRequired']
  readonly #now: () => number
  /** The tokens as last loaded or saved; undefined until the store was first read. */
  #tokens: SessionTokens | null | undefined
  #loading: Promise<SessionTokens | null> | undefined
  /** The one refresh in flight; every caller that needs fresh tokens meanwhile waits for it. */
  #refreshing: Promise<SessionTokens> | undefined
  /** Set once the end of the current session was reported, so it is reported once. */
  #endReported = false

  constructor (options: CalendarClientOptions) {
    this.apiUrl = options.apiUrl.replace(/\/+$/, '')
    this.#store = options.tokenStore ?? new MemoryTokenStore()
    this.#fetch = options.fetch ?? (async (url, init) => await fetch(url, init))
    this.#onReauthRequired = options.onReauthRequired
    this.#now = options.now ?? Date.now
  }

  // ---- sessions

  async signUp (fields: SignUpFields): Promise<AuthResult> {
    return await this.#authenticate('signup', { name: fields.name, email: fields.email, password: fields.password })
  }

  async signIn (credentials: Credentials): Promise<AuthResult> {
    return await this.#authenticate('signin', { email: credentials.email, password: credentials.password })
  }

  /** Ends the session at the server (its streams close there too) and forgets the tokens here. */
  async signOut (): Promise<void> {
    const tokens = await this.#loadTokens()
    if (tokens === null) return
    try {
      const response = await this.#send('POST', '/auth/signout', { ...AUTH_MODE, authorization: `Bearer ${tokens.accessToken}` }, undefined)
      await response.text()
    } finally {
      // Signed out here whatever the server said: an expired or already ended session is as good.
      await this.#setTokens(null)
    }
  }

  /** The signed-in user's id from the front token, or null when signed out. */
  async userId (): Promise<string | null> {
    const tokens = await this.#loadTokens()
    return tokens === null ? null : readFrontToken(tokens.frontToken)?.userId ?? null
  }

  /**
   * An access token that is valid now, and still for `validForMs`: the one kept when it is, else
   * a refreshed one. The expiry comes from the front token, checked before the call (never by a
   * timer), and concurrent callers share one refresh.
   */
  async accessToken (validForMs = 0): Promise<string> {
    const tokens = await this.#loadTokens()
    if (tokens === null) throw await this.#sessionEnded('notSignedIn')
    if (!needsRefresh(tokens, this.#now(), validForMs)) return tokens.accessToken
    return (await this.refresh(tokens)).accessToken
  }

  /** When the kept access token expires (ms since the epoch), or null when signed out. */
  async accessTokenExpiresAt (): Promise<number | null> {
    const tokens = await this.#loadTokens()
    return tokens === null ? null : readFrontToken(tokens.frontToken)?.accessTokenExpiresAt ?? null
  }

  /**
   * Rotates the tokens with POST /api/auth/refresh. `stale` names the tokens the caller found
   * wanting: when they were already replaced meanwhile, the newer ones are the answer and no second
   * refresh is sent. One refresh is in flight at a time.
   */
  async refresh (stale?: SessionTokens): Promise<SessionTokens> {
    // Set before any await, so a caller arriving a moment later finds it.
    this.#refreshing ??= this.#refreshOnce(stale).finally(() => { this.#refreshing = undefined })
    return await this.#refreshing
  }

  async #refreshOnce (stale: SessionTokens | undefined): Promise<SessionTokens> {
    const current = await this.#loadTokens()
    if (current === null) throw await this.#sessionEnded('notSignedIn')
    if (stale !== undefined && current.accessToken !== stale.accessToken) return current
    return await this.#rotate(current)
  }

  async #rotate (tokens: SessionTokens): Promise<SessionTokens> {
    const response = await this.#send('POST', '/auth/refresh', { ...AUTH_MODE, authorization: `Bearer ${tokens.refreshToken}` }, undefined)
    const body = parseBody(await response.text())
    if (response.status === 401) {
      // The session core no longer knows the session (or saw this refresh token used twice).
      throw await this.#sessionEnded('refreshRefused')
    }
    if (response.status !== 200) throw this.#failure(response, body)
    const rotated = this.#tokensFrom(response, tokens)
    await this.#setTokens(rotated)
    return rotated
  }

  // ---- typed reads and writes

  async profile (): Promise<UserProfile> {
    return await this.request<UserProfile>('GET', '/user/profile')
  }

  /** The display preferences kept with the account; a field left out has not been chosen. */
  async preferences (): Promise<UserPreferences> {
    return await this.request<UserPreferences>('GET', '/user/preferences')
  }

  /** Replaces them whole (what is left out goes back to the device's own); answers what was stored (zones under their current name). */
  async setPreferences (preferences: UserPreferences): Promise<UserPreferences> {
    return await this.request<UserPreferences>('PUT', '/user/preferences', { body: preferences })
  }

  /** Every event and occurrence overlapping [start, end), in start order. */
  async listEvents (range: EventRange): Promise<EventView[]> {
    return await this.request<EventView[]>('GET', '/event', { query: { start: range.start, end: range.end } })
  }

  /**
   * The user's events found by the words of `query` (titles, locations, descriptions; each word a
   * prefix), in start order; pass the answer's `next` as `cursor` for the page after.
   */
  async searchEvents (query: string, page: { limit?: number, cursor?: string } = {}): Promise<SearchResultsView> {
    return await this.request<SearchResultsView>('GET', '/events/search', {
      query: { q: query, ...(page.limit === undefined ? {} : { limit: String(page.limit) }), ...(page.cursor === undefined ? {} : { cursor: page.cursor }) }
    })
  }

  /**
   * One calendar as an iCalendar file's text (`calendarId`: one of `GET /api/calendars`, or `own`,
   * the default); the range defaults to a year back and three ahead, and spans at most 1830 days.
   */
  async exportIcs (options: { calendarId?: string, start?: string, end?: string } = {}): Promise<string> {
    const query = Object.fromEntries(Object.entries(options).filter((entry): entry is [string, string] => entry[1] !== undefined))
    return await this.request<string>('GET', '/events/export.ics', { query })
  }

  /**
   * Imports an iCalendar file's text (at most 2 MB, 5000 events) into a calendar (`own` by
   * default). Importing the same file again stores nothing twice: its events count as `skipped`.
   */
  async importIcs (ics: string, options: { calendarId?: string } = {}): Promise<ImportResultBody> {
    return await this.request<ImportResultBody>('POST', '/events/import', {
      ...(options.calendarId === undefined ? {} : { query: { calendarId: options.calendarId } }),
      text: { body: ics, contentType: 'text/calendar; charset=utf-8' }
    })
  }

  async getEvent (id: string): Promise<EventView> {
    return await this.request<EventView>('GET', `/event/${encodeURIComponent(id)}`)
  }

  /**
   * Creates (or, with a known `_id`, replaces) one event and answers its id. The id is chosen
   * here when the change has none, since the server's answer is an empty 204.
   */
  async saveEvent (change: EventChangeInput): Promise<string> {
    const [id] = await this.saveEvents([change])
    return id as string
  }

  /** Several changes, applied all-or-nothing; answers their ids in order. */
  async saveEvents (changes: EventChangeInput[]): Promise<string[]> {
    const withIds = changes.map((change) => ({ ...change, _id: change._id ?? mintEventId() }))
    await this.request<undefined>('POST', '/event', { body: withIds.length === 1 ? withIds[0] : withIds })
    return withIds.map((change) => change._id.replace(/^optimistic-/, ''))
  }

  /** Updates one event, or edits one occurrence of a series (`<seriesId>_<originalStart>`). */
  async updateEvent (id: string, change: EventChangeInput): Promise<void> {
    await this.request<undefined>('PUT', `/event/${encodeURIComponent(id)}`, { body: change })
  }

  async deleteEvent (id: string, applyTo?: EventApplyTo): Promise<void> {
    await this.request<undefined>('DELETE', `/event/${encodeURIComponent(id)}`, applyTo === undefined ? {} : { query: { applyTo } })
  }

  /** Opens the event stream (GET /api/events/stream); see stream.ts for what it does for you. */
  stream (handlers: StreamHandlers, options: StreamOptions = {}): EventStream {
    const stream = new EventStream(this, handlers, options)
    stream.start()
    return stream
  }

  /**
   * A call with the session: the access token checked (and refreshed) first; a 401 refreshes once
   * and tries again once; a second refusal ends the session here. 503 and network failures keep
   * the session and reject with UnavailableError.
   */
  async request<T> (method: string, path: string, options: { query?: Record<string, string>, body?: unknown, text?: { body: string, contentType: string } } = {}): Promise<T> {
    const url = this.#withQuery(path, options.query)
    const body = options.text?.body ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
    const headers: Record<string, string> = options.text !== undefined ? { 'content-type': options.text.contentType } : body === undefined ? {} : { 'content-type': 'application/json' }
    let token = await this.accessToken()
    for (let attempt = 0; ; attempt++) {
      const response = await this.#send(method, url, { ...headers, authorization: `Bearer ${token}` }, body)
      const parsed = parseBody(await response.text())
      if (response.status === 401) {
        if (attempt > 0) throw await this.#sessionEnded('accessRefused')
        token = await this.#afterUnauthorized(token)
        continue
      }
      if (response.status >= 200 && response.status < 300) return (response.status === 204 ? undefined : parsed) as T
      throw this.#failure(response, parsed)
    }
  }

  /** The access token to try again with after `refused` got a 401: one refresh, shared. */
  async #afterUnauthorized (refused: string): Promise<string> {
    const tokens = await this.#loadTokens()
    if (tokens === null) throw await this.#sessionEnded('notSignedIn')
    if (tokens.accessToken !== refused) return tokens.accessToken
    return (await this.refresh(tokens)).accessToken
  }

  /** For the stream: what to do after it was answered 401 with `refused`. */
  async tokenAfterUnauthorized (refused: string): Promise<string> {
    return await this.#afterUnauthorized(refused)
  }

  /** For the stream: a GET with the given access token, answered as it comes (not read). */
  async openStream (accessToken: string, signal: AbortSignal): Promise<FetchResponse> {
    return await this.#send('GET', '/events/stream', { accept: 'text/event-stream', authorization: `Bearer ${accessToken}` }, undefined, signal)
  }

  /** For the stream: the error a non-2xx answer with this body text stands for. */
  failureOf (response: FetchResponse, text: string): Error {
    return this.#failure(response, parseBody(text))
  }

  /** For the stream: a fresh access token was refused too, so the session has ended. */
  async sessionRefused (): Promise<SessionEndedError> {
    return await this.#sessionEnded('accessRefused')
  }

  // ---- internals

  async #authenticate (path: 'signin' | 'signup', fields: Record<string, string>): Promise<AuthResult> {
    const response = await this.#send('POST', `/auth/${path}`, { ...AUTH_MODE, rid: 'emailpassword', 'content-type': 'application/json' },
      JSON.stringify({ formFields: Object.entries(fields).map(([id, value]) => ({ id, value })) }))
    const body = parseBody(await response.text()) as { status?: string, formFields?: FieldErrorBody['formFields'], reason?: string }
    // A field longer than any valid one is refused with 400 and the same field-error body.
    const fieldError = response.status === 400 && body?.status === 'FIELD_ERROR'
    if (response.status !== 200 && !fieldError) throw this.#failure(response, body)
    switch (body.status) {
      case 'OK': {
        const tokens = this.#tokensFrom(response)
        await this.#setTokens(tokens)
        this.#endReported = false
        return { status: 'OK', userId: readFrontToken(tokens.frontToken)?.userId ?? '' }
      }
      case 'WRONG_CREDENTIALS_ERROR':
        return { status: 'WRONG_CREDENTIALS_ERROR' }
      case 'FIELD_ERROR':
        return { status: 'FIELD_ERROR', fields: body.formFields ?? [] }
      default:
        return { status: 'NOT_ALLOWED', reason: body.reason ?? String(body.status) }
    }
  }

  #tokensFrom (response: FetchResponse, previous?: SessionTokens): SessionTokens {
    const accessToken = response.headers.get(TOKEN_HEADERS.access) ?? previous?.accessToken
    const refreshToken = response.headers.get(TOKEN_HEADERS.refresh) ?? previous?.refreshToken
    const frontToken = response.headers.get(TOKEN_HEADERS.front) ?? previous?.frontToken
    if (accessToken === undefined || refreshToken === undefined || frontToken === undefined) {
      throw new ApiError(response.status, undefined, 'the server answered without session tokens (is header mode allowed?)')
    }
    return { accessToken, refreshToken, frontToken }
  }

  #withQuery (path: string, query: Record<string, string> | undefined): string {
    if (query === undefined) return path
    return `${path}?${new URLSearchParams(query).toString()}`
  }

  async #send (method: string, pathAndQuery: string, headers: Record<string, string>, body: string | undefined, signal?: AbortSignal): Promise<FetchResponse> {
    try {
      return await this.#fetch(`${this.apiUrl}${pathAndQuery}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(signal === undefined ? {} : { signal })
      })
    } catch (error) {
      if (signal?.aborted === true) throw error
      throw new UnavailableError(`the backend did not answer: ${error instanceof Error ? error.message : String(error)}`, null)
    }
  }

  #failure (response: FetchResponse, body: unknown): Error {
    const { code, message } = errorFields(body)
    const text = message ?? `HTTP ${response.status}`
    if (response.status === 503) return new UnavailableError(text, retryAfterMs(response.headers.get('retry-after'), new Date(this.#now())), code)
    return new ApiError(response.status, code, text, body)
  }

  async #loadTokens (): Promise<SessionTokens | null> {
    if (this.#tokens !== undefined) return this.#tokens
    // One read of the store, shared: a second read finishing late must not undo a refresh.
    this.#loading ??= Promise.resolve(this.#store.load()).then((tokens) => {
      this.#tokens ??= tokens
      return this.#tokens
    }).finally(() => { this.#loading = undefined })
    return await this.#loading
  }

  async #setTokens (tokens: SessionTokens | null): Promise<void> {
    this.#tokens = tokens
    if (tokens === null) await this.#store.clear()
    else await this.#store.save(tokens)
  }

  /** Forgets the tokens, tells the app once, and answers the error to throw. */
  async #sessionEnded (reason: SessionEndedError['reason']): Promise<SessionEndedError> {
    if (reason !== 'notSignedIn') await this.#setTokens(null)
    if (!this.#endReported) {
      this.#endReported = true
      await this.#onReauthRequired?.(reason)
    }
    return new SessionEndedError(reason)
  }
}
