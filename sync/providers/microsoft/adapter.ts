// The Microsoft adapter of the provider port: the identity platform v2 (authorization code flow with
// PKCE, refresh tokens that rotate on every use) and Microsoft Graph v1.0 calendars, calendar-view
// delta queries and change-notification subscriptions, over plain HTTP (fetch). Production talks to
// login.microsoftonline.com and graph.microsoft.com; a development configuration
// (extprovider2.endpointBase) points both at one origin that serves Microsoft's paths.
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import type { ProviderCredential } from '../../lib/credentials.js'
import { providerVersionWins } from '../../lib/provider-sync.js'
import {
  classifyFailure, graphFieldsOf, rruleLines, toProviderEvent, transactionIdFor
} from '../../lib/providers/microsoft-mapping.js'
import type { GraphEvent, GraphFailure } from '../../lib/providers/microsoft-mapping.js'
import {
  ProviderAuthorizationRevokedError, ProviderCursorExpiredError, ProviderNotFoundError, ProviderUnavailableError,
  ProviderVersionConflictError
} from '../../lib/providers/port.js'
import type {
  AuthorizationRequest, GrantedCredential, ImportRequest, ImportResult, ProviderCalendar, ProviderContext, ProviderEventSink,
  ProviderPort, ProviderWrite, PullResult, Watch, WatchRequest, WriteResult
} from '../../lib/providers/port.js'

export const MICROSOFT_CALENDAR_SCOPE = 'Calendars.ReadWrite'
// offline_access brings the refresh token; openid/email/profile the ID token that names the account.
const SCOPES = ['openid', 'email', 'profile', 'offline_access', MICROSOFT_CALENDAR_SCOPE]

const DAY_MS = 24 * 60 * 60_000
/** The whole range an import and its delta cursor cover: a year back, two years ahead. */
export const FULL_RANGE = { beforeMs: 365 * DAY_MS, afterMs: 730 * DAY_MS }
/** Graph keeps a calendar subscription "under 7 days" (10,080 minutes at most). */
const SUBSCRIPTION_MAX_MS = 10_080 * 60_000 - 5 * 60_000
/** An access token is refreshed this long before Microsoft's expiry, so no call carries a dying one. */
const EXPIRY_MARGIN_MS = 60_000
const CLIENT_CACHE_SIZE = 1000

export interface MicrosoftAdapterOptions {
  clientId: string
  clientSecret: string
  /** Development only: the one origin of a stand-in serving both Microsoft hosts' paths. */
  endpointBase?: string | undefined
  /** Events per delta page (`Prefer: odata.maxpagesize`, at most 1000). */
  pageSize?: number
  /** Deadline of one Microsoft request. */
  timeoutMs?: number
  /** The service's clock: where the import range and subscription lifetimes are counted from. */
  now?: () => Date
}

/** The grant does not include the calendar permission (the person unticked it on the consent page). */
export class MicrosoftScopeMissingError extends Error {
  override name = 'MicrosoftScopeMissingError'
}

interface TokenAnswer {
  access_token?: string
  refresh_token?: string
  expires_in?: number
  scope?: string
  id_token?: string
}

interface GraphPage {
  value?: GraphEvent[]
  '@odata.nextLink'?: string
  '@odata.deltaLink'?: string
}

interface GraphCalendar {
  id: string
  name?: string
  isDefaultCalendar?: boolean
}

interface GraphSubscription {
  id: string
  resource?: string
  expirationDateTime?: string
}

/** A failed Microsoft call, kept without the request (its headers hold the access token). */
class MicrosoftCallError extends Error {
  readonly failure: GraphFailure
  readonly retryAfterSec: number | null

  constructor (what: string, failure: GraphFailure, retryAfterSec: number | null) {
    super(`${what}: ${failure.status ?? 'no answer'}${failure.code ? ` ${failure.code}` : ''}`)
    this.failure = failure
    this.retryAfterSec = retryAfterSec
  }
}

/** The port's error for a failed call. */
function translate (error: MicrosoftCallError): Error {
  const detail = error.message
  switch (classifyFailure(error.failure)) {
    case 'revoked': return new ProviderAuthorizationRevokedError(`Microsoft refused the refresh token (${detail})`)
    case 'cursorExpired': return new ProviderCursorExpiredError(`Microsoft needs a full sync (${detail})`)
    case 'unavailable': return new ProviderUnavailableError(
      `Microsoft is unavailable for now (${detail}${error.retryAfterSec === null ? '' : `, retry after ${error.retryAfterSec} s`})`, error.failure.status)
    case 'notFound': return new ProviderNotFoundError(`Microsoft has no such resource (${detail})`)
    case 'conflict': return new ProviderVersionConflictError(`Microsoft holds a newer version (${detail})`)
    default: return new Error(`Microsoft refused (${detail})`)
  }
}

function claimsOf (idToken: string | undefined): { email?: string, sub?: string } {
  // Received straight from the token endpoint over TLS (OIDC Core 3.1.3.7), so it is not verified again.
  const payload = idToken?.split('.')[1]
  if (!payload) return {}
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
    const email = typeof claims['email'] === 'string' ? claims['email'] : (typeof claims['preferred_username'] === 'string' ? claims['preferred_username'] : undefined)
    const sub = typeof claims['oid'] === 'string' ? claims['oid'] : (typeof claims['sub'] === 'string' ? claims['sub'] : undefined)
    return { ...(email ? { email } : {}), ...(sub ? { sub } : {}) }
  } catch {
    return {}
  }
}

function grantedCalendarScope (scope: string): boolean {
  return scope.split(' ').some((entry) => entry === MICROSOFT_CALENDAR_SCOPE || entry.endsWith(`/${MICROSOFT_CALENDAR_SCOPE}`))
}

export class MicrosoftCalendarAdapter implements ProviderPort {
  readonly provider = 'microsoft' as const
  readonly #options: MicrosoftAdapterOptions
  readonly #login: string
  readonly #graph: string
  /** Access tokens by connection, with the refresh token they came from. */
  readonly #tokens = new Map<string, { refreshToken: string, accessToken: string, expiresAt: number }>()

  constructor (options: MicrosoftAdapterOptions) {
    this.#options = options
    const origin = options.endpointBase === undefined ? null : new URL(options.endpointBase).origin
    this.#login = origin ?? 'https://login.microsoftonline.com'
    this.#graph = `${origin ?? 'https://graph.microsoft.com'}/v1.0`
  }

  authorizationUrl (request: AuthorizationRequest): string {
    const url = new URL(`${this.#login}/common/oauth2/v2.0/authorize`)
    url.search = new URLSearchParams({
      client_id: this.#options.clientId,
      response_type: 'code',
      redirect_uri: request.redirectUri,
      response_mode: 'query',
      scope: SCOPES.join(' '),
      state: request.state,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      // A new connection lets the person pick the account; a reconnect signs in silently when it can.
      ...(request.intent === 'connect' ? { prompt: 'select_account' } : {})
    }).toString()
    return url.toString()
  }

  async exchangeCode (request: { code: string, codeVerifier: string, redirectUri: string }): Promise<GrantedCredential> {
    const tokens = await this.#token('token exchange', {
      grant_type: 'authorization_code',
      code: request.code,
      code_verifier: request.codeVerifier,
      redirect_uri: request.redirectUri,
      scope: SCOPES.join(' ')
    })
    const scope = tokens.scope ?? ''
    if (!grantedCalendarScope(scope)) throw new MicrosoftScopeMissingError('the grant does not include the calendar permission')
    const claims = claimsOf(tokens.id_token)
    return {
      credential: {
        ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
        scope,
        ...(claims.email ? { email: claims.email } : {}),
        ...(claims.sub ? { subject: claims.sub } : {})
      },
      refreshTokenIssued: Boolean(tokens.refresh_token)
    }
  }

  async listCalendars (context: ProviderContext): Promise<ProviderCalendar[]> {
    const found: ProviderCalendar[] = []
    let next: string | null = `${this.#graph}/me/calendars?$top=100`
    while (next !== null) {
      const page: { value?: GraphCalendar[], '@odata.nextLink'?: string } = await this.#graphCall(context, 'calendars.list', 'GET', next)
      for (const entry of page.value ?? []) {
        if (!entry.id) continue
        // Graph's calendar has no zone of its own; times arrive in UTC with their event's zone.
        found.push({ calendarId: entry.id, name: entry.name ?? entry.id, primary: entry.isDefaultCalendar === true, timeZone: 'UTC' })
      }
      next = page['@odata.nextLink'] ?? null
    }
    return found
  }

  async importCalendar (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink): Promise<ImportResult> {
    const now = this.#now().getTime()
    const window = request.window ?? { from: new Date(now - FULL_RANGE.beforeMs), to: new Date(now + FULL_RANGE.afterMs) }
    const first = `${this.#graph}/me/calendars/${encodeURIComponent(calendar.calendarId)}/calendarView/delta?` +
      new URLSearchParams({ startDateTime: window.from.toISOString(), endDateTime: window.to.toISOString() }).toString()
    const cursor = await this.#delta(context, calendar, request.pageToken ?? first, sink)
    return { cursor: request.window ? null : cursor }
  }

  async pullChanges (context: ProviderContext, calendar: ProviderCalendar, cursor: string, sink: ProviderEventSink): Promise<PullResult> {
    return { cursor: await this.#delta(context, calendar, cursor, sink) }
  }

  async writeEvent (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite): Promise<WriteResult> {
    const { subject } = write
    const occurrence = subject.providerEventId === undefined && subject.seriesProviderEventId && subject.originalStartDate
      ? await this.#occurrence(context, subject.seriesProviderEventId, subject.originalStartDate)
      : null
    const target = subject.providerEventId ?? occurrence?.id ?? null
    const current = target === null ? occurrence : await this.#current(context, target)
    const removal = write.operation === 'delete' || subject.cancelled === true

    if (current !== null && providerVersionWins(this.#updated(current), subject.lastUpdated)) {
      return { outcome: 'providerNewer', event: await this.#mapped(context, current, calendar) }
    }
    const ifMatch: Record<string, string> = current?.['@odata.etag'] ? { 'If-Match': current['@odata.etag'] } : {}

    if (removal) {
      if (current === null || current.isCancelled === true) return { outcome: 'nothingToDo', event: null }
      try {
        await this.#graphCall(context, 'event.delete', 'DELETE', `${this.#graph}/me/events/${encodeURIComponent(current.id)}`, undefined, ifMatch)
      } catch (error) {
        // Deleted there meanwhile: the write has nothing left to do.
        if (!(error instanceof ProviderNotFoundError)) throw error
      }
      return { outcome: 'written', event: null }
    }

    const content = subject.content
    if (content === undefined) throw new Error('a provider write of a live event needs its content')
    if (current !== null) {
      // The pattern is written only when it changed: Graph drops a series' exceptions on every write of it.
      const held = current.type === 'seriesMaster' && current.recurrence ? rruleLines(current.recurrence, current.isAllDay === true, content.timeZone) : null
      const recurrence = current.type !== 'occurrence' && current.type !== 'exception' && content.recurrence !== undefined &&
        JSON.stringify(held) !== JSON.stringify(content.recurrence)
      const patched: GraphEvent = await this.#graphCall(context, 'event.update', 'PATCH', `${this.#graph}/me/events/${encodeURIComponent(current.id)}`,
        graphFieldsOf(content, { recurrence }), ifMatch)
      return { outcome: 'written', event: await this.#mapped(context, patched, calendar) }
    }
    if (subject.providerEventId !== undefined || subject.seriesProviderEventId !== undefined) {
      throw new ProviderNotFoundError(`Microsoft has no event ${subject.providerEventId === undefined ? 'occurrence' : 'with the linked id'} to change`)
    }
    const body = { ...graphFieldsOf(content, { recurrence: true }), transactionId: transactionIdFor(context.connectionId, write.eventId) }
    let created: GraphEvent = await this.#graphCall(context, 'event.create', 'POST', `${this.#graph}/me/calendars/${encodeURIComponent(calendar.calendarId)}/events`, body)
    // A repeated transactionId answers the first insert, which may predate this change of the event.
    if (write.operation !== 'create') {
      created = await this.#graphCall(context, 'event.update', 'PATCH', `${this.#graph}/me/events/${encodeURIComponent(created.id)}`, graphFieldsOf(content, { recurrence: false }))
    }
    return { outcome: 'inserted', event: await this.#mapped(context, created, calendar) }
  }

  async watch (context: ProviderContext, calendarId: string, request: WatchRequest): Promise<Watch> {
    const resource = `me/calendars/${calendarId}/events`
    const subscription: GraphSubscription = await this.#graphCall(context, 'subscription.create', 'POST', `${this.#graph}/subscriptions`, {
      changeType: 'created,updated,deleted',
      notificationUrl: request.address,
      lifecycleNotificationUrl: request.address,
      resource,
      expirationDateTime: this.#expiry(request.expiresAt).toISOString(),
      clientState: request.token
    })
    return { channelId: subscription.id, resourceId: subscription.resource ?? resource, expiresAt: this.#expiresAt(subscription, request.expiresAt) }
  }

  async renewWatch (context: ProviderContext, watch: { channelId: string, resourceId: string }, expiresAt: Date): Promise<Watch> {
    const subscription: GraphSubscription = await this.#graphCall(context, 'subscription.update', 'PATCH',
      `${this.#graph}/subscriptions/${encodeURIComponent(watch.channelId)}`, { expirationDateTime: this.#expiry(expiresAt).toISOString() })
    return { channelId: watch.channelId, resourceId: watch.resourceId, expiresAt: this.#expiresAt(subscription, expiresAt) }
  }

  async unwatch (context: ProviderContext, watch: { channelId: string, resourceId: string }): Promise<void> {
    try {
      await this.#graphCall(context, 'subscription.delete', 'DELETE', `${this.#graph}/subscriptions/${encodeURIComponent(watch.channelId)}`)
    } catch (error) {
      // A subscription that is already gone is stopped.
      if (!(error instanceof ProviderNotFoundError)) throw error
    }
  }

  #now (): Date {
    return this.#options.now?.() ?? new Date()
  }

  #expiry (wanted: Date): Date {
    return new Date(Math.min(wanted.getTime(), this.#now().getTime() + SUBSCRIPTION_MAX_MS))
  }

  #expiresAt (subscription: GraphSubscription, fallback: Date): Date {
    const ms = subscription.expirationDateTime ? Date.parse(subscription.expirationDateTime) : Number.NaN
    return Number.isNaN(ms) ? this.#expiry(fallback) : new Date(ms)
  }

  #updated (event: GraphEvent): string {
    const value = event.lastModifiedDateTime ?? ''
    return value === '' || value.endsWith('Z') ? value : `${value}Z`
  }

  /**
   * Every page of a delta round from `link` (the first request, a nextLink or a deltaLink), each
   * handed to the sink before the next is read. Masters are not part of a calendar view: the
   * master of each series seen is read once per round and sent with its rule before its exceptions.
   */
  async #delta (context: ProviderContext, calendar: ProviderCalendar, link: string, sink: ProviderEventSink): Promise<string> {
    const masters = new Set<string>()
    const headers = { Prefer: `odata.maxpagesize=${this.#options.pageSize ?? 500}` }
    let next = link
    for (;;) {
      const page: GraphPage = await this.#graphCall(context, 'calendarView.delta', 'GET', next, undefined, headers)
      const now = this.#now()
      const events: ProviderEvent[] = []
      for (const item of page.value ?? []) {
        const masterId = item['@removed'] === undefined ? item.seriesMasterId : undefined
        if (masterId && !masters.has(masterId)) {
          masters.add(masterId)
          const master = await this.#current(context, masterId)
          const mapped = master === null ? null : toProviderEvent(master, calendar.timeZone, now)
          if (mapped !== null) events.push(mapped)
        }
        const mapped = toProviderEvent(item, calendar.timeZone, now)
        if (mapped !== null) events.push(mapped)
      }
      const nextLink = page['@odata.nextLink'] ?? null
      await sink({ events, nextPageToken: nextLink })
      if (nextLink === null) {
        const deltaLink = page['@odata.deltaLink']
        if (!deltaLink) throw new Error('Microsoft ended a delta round without a deltaLink')
        return deltaLink
      }
      next = nextLink
    }
  }

  /** The event as Graph holds it now; null when it is gone. */
  async #current (context: ProviderContext, eventId: string): Promise<GraphEvent | null> {
    try {
      return await this.#graphCall<GraphEvent>(context, 'event.get', 'GET', `${this.#graph}/me/events/${encodeURIComponent(eventId)}`)
    } catch (error) {
      if (error instanceof ProviderNotFoundError) return null
      throw error
    }
  }

  /** The occurrence of a series that started at `originalStartDate`; null when there is none. */
  async #occurrence (context: ProviderContext, seriesId: string, originalStartDate: string): Promise<GraphEvent | null> {
    const allDay = /^\d{4}-\d{2}-\d{2}$/.test(originalStartDate)
    const start = new Date(allDay ? `${originalStartDate}T00:00:00Z` : originalStartDate)
    // A day on both sides: an all-day occurrence's UTC start depends on the series' zone.
    const query = new URLSearchParams({ startDateTime: new Date(start.getTime() - DAY_MS).toISOString(), endDateTime: new Date(start.getTime() + 2 * DAY_MS).toISOString() })
    const page: GraphPage = await this.#graphCall(context, 'event.instances', 'GET', `${this.#graph}/me/events/${encodeURIComponent(seriesId)}/instances?${query.toString()}`)
    const wanted = allDay ? originalStartDate : start.toISOString()
    return (page.value ?? []).find((item) => {
      const original = item.originalStart ? new Date(item.originalStart.endsWith('Z') ? item.originalStart : `${item.originalStart}Z`) : null
      if (original === null || Number.isNaN(original.getTime())) return false
      return allDay ? item.start?.dateTime.slice(0, 10) === wanted : original.toISOString() === wanted
    }) ?? null
  }

  async #mapped (context: ProviderContext, event: GraphEvent, calendar: ProviderCalendar): Promise<ProviderEvent> {
    // An occurrence becomes an exception once written; a plain one is told of as its master's exception.
    const described = event.type === 'occurrence' ? { ...event, type: 'exception' } : event
    const mapped = toProviderEvent(described, calendar.timeZone, this.#now())
    if (mapped === null) {
      const reread = await this.#current(context, event.id)
      const again = reread === null ? null : toProviderEvent(reread, calendar.timeZone, this.#now())
      if (again === null) throw new Error('Microsoft answered a write with an event it cannot describe')
      return again
    }
    return mapped
  }

  /** One identity-platform token request; errors are the port's. */
  async #token (what: string, form: Record<string, string>): Promise<TokenAnswer> {
    const body = new URLSearchParams({ client_id: this.#options.clientId, client_secret: this.#options.clientSecret, ...form })
    const response = await this.#fetch(what, `${this.#login}/common/oauth2/v2.0/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: body.toString()
    })
    const answer = await this.#json(what, response)
    if (!response.ok) {
      const code = typeof (answer as { error?: unknown }).error === 'string' ? (answer as { error: string }).error : null
      throw translate(new MicrosoftCallError(what, { status: response.status, code }, retryAfterOf(response)))
    }
    return answer as TokenAnswer
  }

  /**
   * An access token for the connection. Each refresh answers a new refresh token, which is stored
   * (and put in the context, so the rest of the job uses it) before the access token is used.
   */
  async #accessToken (context: ProviderContext): Promise<string> {
    const refreshToken = context.credential['refreshToken']
    if (!refreshToken) throw new ProviderAuthorizationRevokedError('the stored Microsoft credential has no refresh token')
    const cached = this.#tokens.get(context.connectionId)
    if (cached !== undefined && cached.refreshToken === refreshToken && cached.expiresAt > Date.now() + EXPIRY_MARGIN_MS) return cached.accessToken
    const tokens = await this.#token('token refresh', { grant_type: 'refresh_token', refresh_token: refreshToken, scope: SCOPES.join(' ') })
    if (!tokens.access_token) throw new Error('Microsoft answered a refresh without an access token')
    let current = refreshToken
    if (tokens.refresh_token && tokens.refresh_token !== refreshToken) {
      const renewed: ProviderCredential = { ...context.credential, refreshToken: tokens.refresh_token, ...(tokens.scope ? { scope: tokens.scope } : {}) }
      await context.saveCredential?.(renewed)
      context.credential = renewed
      current = tokens.refresh_token
    }
    this.#tokens.set(context.connectionId, { refreshToken: current, accessToken: tokens.access_token, expiresAt: Date.now() + (tokens.expires_in ?? 3599) * 1000 })
    if (this.#tokens.size > CLIENT_CACHE_SIZE) {
      const oldest = this.#tokens.keys().next().value
      if (oldest !== undefined) this.#tokens.delete(oldest)
    }
    return tokens.access_token
  }

  /**
   * One Graph call for a connection. An access token Graph refuses (revoked, or expired by its clock
   * rather than ours) is dropped and the call made once more with a fresh one; a dead grant then
   * shows as invalid_grant. Throttling is not retried here: the job ladder does that.
   */
  async #graphCall<T> (context: ProviderContext, what: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const accessToken = await this.#accessToken(context)
      const response = await this.#fetch(what, url, {
        method,
        headers: {
          authorization: `Bearer ${accessToken}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      if (response.status === 401 && attempt === 0) {
        await response.body?.cancel()
        this.#tokens.delete(context.connectionId)
        continue
      }
      if (response.status === 204) return undefined as T
      const answer = await this.#json(what, response)
      if (response.ok) return answer as T
      const error = (answer as { error?: { code?: unknown } }).error
      const code = typeof error?.code === 'string' ? error.code : null
      throw translate(new MicrosoftCallError(what, { status: response.status, code }, retryAfterOf(response)))
    }
  }

  async #fetch (what: string, url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(this.#options.timeoutMs ?? 30_000) })
    } catch {
      // The cause may quote the request; only what failed is kept.
      throw new ProviderUnavailableError(`Microsoft did not answer (${what})`, null)
    }
  }

  async #json (what: string, response: Response): Promise<unknown> {
    try {
      const text = await response.text()
      return text === '' ? {} : JSON.parse(text) as unknown
    } catch {
      if (response.status === 429 || response.status >= 500) throw translate(new MicrosoftCallError(what, { status: response.status, code: null }, retryAfterOf(response)))
      throw new Error(`Microsoft answered ${what} with a body that is not JSON (${response.status})`)
    }
  }
}

function retryAfterOf (response: Response): number | null {
  const value = Number(response.headers.get('retry-after'))
  return Number.isFinite(value) && value >= 0 && response.headers.has('retry-after') ? value : null
}
