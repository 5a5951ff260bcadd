// The Google adapter of the provider port: OAuth 2.0 through google-auth-library, Calendar API v3
// through @googleapis/calendar. Production talks to Google's own endpoints; a development
// configuration (extprovider.endpointBase) points both libraries at another origin that serves
// Google's paths, and nothing else changes.
import { retryAfterMs } from '../../../lib/backoff.js'
import { googleLibraryEndpointsAt } from '../../../lib/google-endpoints.js'
import { googleFetch } from '../buffered-fetch.js'
import { FreshGrants } from '../fresh-grants.js'
import { takePagesReadingAhead } from '../read-ahead.js'
import { CodeChallengeMethod, OAuth2Client } from 'google-auth-library'
import type { Credentials } from 'google-auth-library'
import { calendar } from '@googleapis/calendar'
import type { calendar_v3 as CalendarV3 } from '@googleapis/calendar'
import type { EventContent, ProviderEvent } from '../../../schemas/sync/index.js'
import {
  calendarDefaultRemindersOf, classifyFailure, EVENT_ID_PROPERTY, googleFieldsOf, insertIdFor, instanceId, toProviderEvent
} from '../../lib/providers/google-mapping.js'
import type { FailureKind, GoogleFailure } from '../../lib/providers/google-mapping.js'
import { providerVersionWins } from '../../lib/provider-sync.js'
import { planWrite } from '../../lib/merge.js'
import { contentTiming, exceptionMover, followedFields, occurrenceTimes, sameTiming, slotChecker } from '../../../lib/events/series-move.js'
import { ProviderAuthorizationRevokedError, ProviderNotFoundError } from '../../lib/providers/port.js'
import { colorOf, providerError, type ProviderFailureKind } from '../../lib/providers/port.js'
import type {
  AuthorizationRequest, GrantedCredential, ImportRequest, ImportResult, ProviderCalendar, ProviderContext, ProviderEventSink,
  ProviderPort, ProviderWrite, PullResult, Watch, WatchRequest, WriteResult
} from '../../lib/providers/port.js'
import { idTokenIdentity } from '../../lib/providers/id-token.js'
import { setBounded } from '../../lib/bounded-map.js'

const GOOGLE_CALENDAR_SCOPE = 'https://www.googleapis.com/auth/calendar'
const SCOPES = ['openid', 'email', GOOGLE_CALENDAR_SCOPE]

/** A connection's access tokens are kept this many connections deep, so each job does not refresh. */
const CLIENT_CACHE_SIZE = 1000

export interface GoogleAdapterOptions {
  clientId: string
  clientSecret: string
  /** Development only: the origin of a stand-in serving Google's paths. Absent: Google itself. */
  endpointBase?: string | undefined
  /** Events per page of a list (Google allows up to 2500). */
  pageSize?: number
  /** Deadline of one Google request. */
  timeoutMs?: number
}

/** The insufficient scopes of a grant: the user unticked the calendar on the consent page. */
class GoogleScopeMissingError extends Error {
  override name = 'GoogleScopeMissingError'
}

/** Reads what a google-auth-library / gaxios error says, without keeping the request (it holds tokens). */
function failureOf (error: unknown): GoogleFailure {
  const response = (error as { response?: { status?: unknown, data?: unknown } } | null)?.response
  const status = typeof response?.status === 'number' ? response.status : null
  const data = response?.data as { error?: unknown } | undefined
  const body = data?.error
  const oauthError = typeof body === 'string' ? body : null
  const reason = typeof body === 'object' && body !== null
    ? ((body as { errors?: Array<{ reason?: unknown }> }).errors?.[0]?.reason ?? null)
    : null
  // google-auth-library may report a dead refresh token only in its message.
  const message = error instanceof Error ? error.message : ''
  return { status, reason: typeof reason === 'string' ? reason : null, oauthError: oauthError ?? (message.includes('invalid_grant') ? 'invalid_grant' : null) }
}

/** The Retry-After of a failed call's answer (gaxios gives the fetch Headers), in milliseconds. */
function retryAfterOf (error: unknown): number | null {
  const headers = (error as { response?: { headers?: unknown } } | null)?.response?.headers
  return headers instanceof Headers ? retryAfterMs(headers.get('retry-after'), new Date()) : null
}

/** How the port reads Google's classes of failure. */
const GOOGLE_FAILURES: Record<FailureKind, ProviderFailureKind> = {
  revoked: 'revoked', cursorExpired: 'cursorExpired', unavailable: 'unavailable', notFound: 'notFound', gone: 'notFound', conflict: 'conflict', duplicate: 'rejected', other: 'rejected'
}

/** The port's error for a failed Google call; the original is never kept (its config holds the access token). */
function translate (error: unknown, what: string): Error {
  const failure = failureOf(error)
  const detail = `${what}: ${failure.status ?? 'no answer'}${failure.reason ? ` ${failure.reason}` : ''}${failure.oauthError ? ` ${failure.oauthError}` : ''}`
  return providerError({ kind: GOOGLE_FAILURES[classifyFailure(failure)], who: 'Google', detail, status: failure.status, retryAfterMs: retryAfterOf(error) })
}

async function call<T> (what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw translate(error, what)
  }
}

export class GoogleCalendarAdapter implements ProviderPort {
  readonly provider = 'google' as const
  readonly #options: GoogleAdapterOptions
  readonly #rootUrl: string | undefined
  readonly #clients = new Map<string, { refreshToken: string, client: OAuth2Client }>()
  readonly #freshGrants = new FreshGrants()

  constructor (options: GoogleAdapterOptions) {
    this.#options = options
    this.#rootUrl = options.endpointBase === undefined ? undefined : `${new URL(options.endpointBase).origin}/`
  }

  authorizationUrl (request: AuthorizationRequest): string {
    return this.#oauthClient().generateAuthUrl({
      access_type: 'offline',
      scope: SCOPES,
      include_granted_scopes: true,
      state: request.state,
      redirect_uri: request.redirectUri,
      code_challenge: request.codeChallenge,
      code_challenge_method: CodeChallengeMethod.S256,
      // A new connection needs a refresh token, which Google issues only on a consent; a reconnect
      // keeps the stored one when Google issues none.
      ...(request.intent === 'connect' ? { prompt: 'consent' } : {})
    })
  }

  async exchangeCode (request: { code: string, codeVerifier: string, redirectUri: string }): Promise<GrantedCredential> {
    const client = this.#oauthClient()
    const { tokens } = await call('token exchange', async () => await client.getToken({ code: request.code, codeVerifier: request.codeVerifier, redirect_uri: request.redirectUri }))
    const granted = (tokens.scope ?? '').split(' ')
    if (!granted.includes(GOOGLE_CALENDAR_SCOPE)) throw new GoogleScopeMissingError('the grant does not include the calendar scope')
    const claims = idTokenIdentity(tokens.id_token, { email: ['email'], subject: ['sub'] })
    if (tokens.refresh_token && tokens.access_token && typeof tokens.expiry_date === 'number') {
      this.#freshGrants.keep(tokens.refresh_token, tokens.access_token, tokens.expiry_date)
    }
    return {
      credential: {
        ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
        scope: granted.join(' '),
        ...(claims.email ? { email: claims.email } : {}),
        ...(claims.sub ? { subject: claims.sub } : {})
      },
      refreshTokenIssued: Boolean(tokens.refresh_token)
    }
  }

  async listCalendars (context: ProviderContext): Promise<ProviderCalendar[]> {
    const found: ProviderCalendar[] = []
    let pageToken: string | undefined
    do {
      const { data } = await this.#call(context, 'calendarList.list', async (api) => await api.calendarList.list({ showHidden: true, maxResults: 250, ...(pageToken ? { pageToken } : {}) }))
      for (const entry of data.items ?? []) {
        if (!entry.id || entry.deleted) continue
        found.push({
          calendarId: entry.id,
          name: entry.summaryOverride ?? entry.summary ?? entry.id,
          primary: entry.primary === true,
          timeZone: entry.timeZone ?? 'UTC',
          ...colorOf(entry.backgroundColor),
          ...calendarDefaultRemindersOf(entry.defaultReminders)
        })
      }
      pageToken = data.nextPageToken ?? undefined
    } while (pageToken)
    return found
  }

  async importCalendar (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink): Promise<ImportResult> {
    const window = request.window
    const cursor = await this.#list(context, calendar, {
      ...(window ? { timeMin: window.from.toISOString(), timeMax: window.to.toISOString() } : {})
    }, request.pageToken ?? null, sink)
    return { cursor: window ? null : cursor }
  }

  async pullChanges (context: ProviderContext, calendar: ProviderCalendar, cursor: string, sink: ProviderEventSink): Promise<PullResult> {
    const next = await this.#list(context, calendar, { syncToken: cursor }, null, sink)
    if (next === null) throw new Error('Google ended an incremental list without a sync token')
    return { cursor: next }
  }

  async writeEvent (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite): Promise<WriteResult> {
    const { subject } = write
    const calendarId = calendar.calendarId
    const occurrence = subject.seriesProviderEventId && subject.originalStartDate
      ? instanceId(subject.seriesProviderEventId, subject.originalStartDate)
      : null
    // An own event that never reached Google is addressed by the id its insert gets, so a retried
    // insert, or an update that overtook the insert's link, finds the first copy.
    const target = subject.providerEventId ?? occurrence ?? insertIdFor(context.connectionId, write.eventId)
    const current = await this.#current(context, calendarId, target)
    const removal = write.operation === 'delete' || subject.cancelled === true

    // Google's copy as our own last write left it is no change by another device: its `updated` is
    // when that write arrived, which can be after the backend's change that this write carries.
    const ownCopy = current !== null && ((write.ownVersion !== undefined && current.etag === write.ownVersion) || await this.#untouchedOwnOccurrence(context, calendarId, current, write))
    if (removal && current !== null && !ownCopy && providerVersionWins(current.updated ?? '', subject.lastUpdated)) {
      return { outcome: 'providerNewer', event: this.#mapped(current, calendar) }
    }
    // A change made there since the version this one was made on is merged with it, part by part.
    const theirs = current === null || current.status === 'cancelled' ? null : toProviderEvent(current, calendar.timeZone)
    const plan = removal ? null : planWrite(subject, current === null ? null : { ...(theirs?.content === undefined ? {} : { content: theirs.content }), updated: current.updated ?? '' }, ownCopy)
    if (plan?.kind === 'theirs' && current !== null) return { outcome: 'providerNewer', event: this.#mapped(current, calendar) }
    const written = plan?.kind === 'write' && plan.merged ? 'merged' : 'written'
    const ifMatch = current?.etag ? { headers: { 'If-Match': current.etag } } : {}

    if (removal) {
      if (current === null || current.status === 'cancelled') return { outcome: 'nothingToDo', event: null }
      try {
        await this.#call(context, 'events.delete', async (api) => await api.events.delete({ calendarId, eventId: target, sendUpdates: 'none' }, ifMatch))
      } catch (error) {
        // Deleted there meanwhile: the write has nothing left to do.
        if (!(error instanceof ProviderNotFoundError)) throw error
      }
      return { outcome: 'written', event: null }
    }

    const content = plan?.kind === 'write' ? plan.content : subject.content
    if (content === undefined) throw new Error('a provider write of a live event needs its content')
    const fields = googleFieldsOf(content, current)
    if (current !== null) {
      // A deleted event that the backend changed later comes back.
      const requestBody = current.status === 'cancelled' ? { ...fields, status: 'confirmed' } : fields
      const { data } = await this.#call(context, 'events.patch', async (api) => await api.events.patch({ calendarId, eventId: target, sendUpdates: 'none', requestBody }, ifMatch))
      const before = occurrence === null && current.recurrence != null ? toProviderEvent(current, calendar.timeZone)?.content : undefined
      if (before !== undefined && typeof current.iCalUID === 'string') await this.#moveExceptions(context, calendar, target, current.iCalUID, before, content)
      return { outcome: written, event: this.#mapped(data, calendar), ...(typeof current.etag === 'string' ? { replaced: current.etag } : {}) }
    }
    if (target !== insertIdFor(context.connectionId, write.eventId)) {
      throw new ProviderNotFoundError(`Google has no event ${subject.providerEventId === undefined ? 'occurrence' : 'with the linked id'} to change`)
    }
    const requestBody: CalendarV3.Schema$Event = { ...fields, id: target, extendedProperties: { private: { [EVENT_ID_PROPERTY]: write.eventId } } }
    const { data } = await this.#call(context, 'events.insert', async (api) => await api.events.insert({ calendarId, sendUpdates: 'none', requestBody }))
    return { outcome: 'inserted', event: this.#mapped(data, calendar) }
  }

  /**
   * Google keeps a series' exceptions where they were when the series moves: one whose original
   * start is no longer an occurrence shows as an extra event. So they move with the series here, by
   * the backend's own rule (lib/events/series-move.ts): each exception is written again on its new
   * occurrence (cancelled, or with its own fields), and the old one goes (deleted, or made the
   * plain occurrence again where the moved series still has one). A new title, description or
   * location of the series reaches each exception that had the old one, moved or not.
   */
  async #moveExceptions (context: ProviderContext, calendar: ProviderCalendar, seriesId: string, iCalUID: string, before: EventContent, after: EventContent): Promise<void> {
    const retimed = !sameTiming(contentTiming(before), contentTiming(after))
    if (!retimed && Object.keys(followedFields(before, after, before)).length === 0) return
    const calendarId = calendar.calendarId
    const exceptions: CalendarV3.Schema$Event[] = []
    let pageToken: string | undefined
    do {
      const { data } = await this.#call(context, 'events.list', async (api) => await api.events.list({ calendarId, iCalUID, showDeleted: true, singleEvents: false, maxResults: 2500, ...(pageToken === undefined ? {} : { pageToken }) }))
      exceptions.push(...(data.items ?? []).filter((item) => item.recurringEventId === seriesId))
      pageToken = data.nextPageToken ?? undefined
    } while (pageToken !== undefined)

    const mover = exceptionMover(contentTiming(before), contentTiming(after))
    const occurs = slotChecker(contentTiming(after))
    const planned = exceptions.flatMap((item) => {
      const mapped = toProviderEvent(item, calendar.timeZone)
      const original = mapped?.originalStartDate
      if (mapped === null || original === undefined) return []
      const times = mapped.content ?? { startDate: original, endDate: original }
      const moved = mover === null ? null : mover({ originalStartDate: original, startDate: times.startDate, endDate: times.endDate })
      return [{ item, mapped, original, moved }]
    })
    const targets = new Set(planned.flatMap(({ moved }) => moved === null ? [] : [instanceId(seriesId, moved.originalStartDate)]))
    const write = async (eventId: string, requestBody: CalendarV3.Schema$Event | null): Promise<void> => {
      try {
        if (requestBody === null) await this.#call(context, 'events.delete', async (api) => await api.events.delete({ calendarId, eventId, sendUpdates: 'none' }))
        else await this.#call(context, 'events.patch', async (api) => await api.events.patch({ calendarId, eventId, sendUpdates: 'none', requestBody }))
      } catch (error) {
        // Already gone there: what was to be removed is.
        if (!(error instanceof ProviderNotFoundError) || requestBody !== null) throw error
      }
    }
    // Google's "all events" edit reaches only the series: its changed occurrences keep the old text.
    const textOf = (content: EventContent): Pick<CalendarV3.Schema$Event, 'summary' | 'description' | 'location'> => {
      const followed = followedFields(before, after, content)
      return {
        ...(followed.title === undefined ? {} : { summary: followed.title }),
        ...(followed.description === undefined ? {} : { description: followed.description === '' ? null : followed.description }),
        ...(followed.location === undefined ? {} : { location: followed.location === '' ? null : followed.location })
      }
    }
    if (!retimed) {
      for (const { item, mapped } of planned) {
        const text = item.status === 'cancelled' || mapped.content === undefined ? {} : textOf(mapped.content)
        if (typeof item.id === 'string' && Object.keys(text).length > 0) await write(item.id, text)
      }
      return
    }
    for (const { item, original } of planned) {
      if (typeof item.id !== 'string' || targets.has(item.id)) continue
      if (occurs(original)) {
        await write(item.id, { ...googleFieldsOf({ ...after, ...occurrenceTimes(contentTiming(after), original), recurrence: undefined }), recurrence: null, status: 'confirmed' })
      } else if (item.status !== 'cancelled') {
        await write(item.id, null)
      }
    }
    for (const { item, mapped, moved } of planned) {
      if (moved === null) continue
      const eventId = instanceId(seriesId, moved.originalStartDate)
      if (item.status === 'cancelled' || mapped.content === undefined) {
        await write(eventId, null)
        continue
      }
      await write(eventId, { ...googleFieldsOf({ ...mapped.content, startDate: moved.startDate, endDate: moved.endDate, recurrence: undefined }), ...textOf(mapped.content), recurrence: null, status: 'confirmed' })
    }
  }

  /**
   * Whether `current`, an occurrence of a series, is as our own last write of the series left it:
   * an occurrence nobody changed carries its series' `updated`, which is when our write of the
   * series arrived, later than a change of the occurrence made here just before it. So an
   * occurrence not changed since the series, whose series is our own write unchanged, holds no
   * newer change by anyone else. Asked only when the occurrence looks newer than the change.
   */
  async #untouchedOwnOccurrence (context: ProviderContext, calendarId: string, current: CalendarV3.Schema$Event, write: ProviderWrite): Promise<boolean> {
    const seriesId = current.recurringEventId
    if (typeof seriesId !== 'string' || write.seriesOwnVersion === undefined || !providerVersionWins(current.updated ?? '', write.subject.lastUpdated)) return false
    const series = await this.#current(context, calendarId, seriesId)
    return series !== null && series.etag === write.seriesOwnVersion && Date.parse(current.updated ?? '') <= Date.parse(series.updated ?? '')
  }

  /** The event as Google holds it now (deleted ones too, as `cancelled`); null when there is none. */
  async #current (context: ProviderContext, calendarId: string, eventId: string): Promise<CalendarV3.Schema$Event | null> {
    try {
      const { data } = await this.#call(context, 'events.get', async (api) => await api.events.get({ calendarId, eventId }))
      return data
    } catch (error) {
      if (error instanceof ProviderNotFoundError) return null
      throw error
    }
  }

  async watch (context: ProviderContext, calendarId: string, request: WatchRequest): Promise<Watch> {
    const { data } = await this.#call(context, 'events.watch', async (api) => await api.events.watch({
      calendarId,
      requestBody: { id: request.channelId, type: 'web_hook', address: request.address, token: request.token, expiration: String(request.expiresAt.getTime()) }
    }))
    if (!data.resourceId) throw new Error('Google answered a watch without a resource id')
    const expiration = Number(data.expiration)
    return { channelId: request.channelId, resourceId: data.resourceId, expiresAt: Number.isFinite(expiration) && expiration > 0 ? new Date(expiration) : request.expiresAt }
  }

  async unwatch (context: ProviderContext, watch: { channelId: string, resourceId: string }): Promise<void> {
    try {
      await this.#call(context, 'channels.stop', async (api) => await api.channels.stop({ requestBody: { id: watch.channelId, resourceId: watch.resourceId } }))
    } catch (error) {
      // A channel that is already gone is stopped.
      if (!(error instanceof ProviderNotFoundError)) throw error
    }
  }

  /**
   * Every page of a list after `pageToken`, in order, into the sink, the next read from Google while
   * the sink applies the current one (takePagesReadingAhead); the sync token of the last page, if any.
   */
  async #list (context: ProviderContext, calendar: ProviderCalendar, query: CalendarV3.Params$Resource$Events$List, pageToken: string | null, sink: ProviderEventSink): Promise<string | null> {
    const read = async (token: string | null) => {
      const params: CalendarV3.Params$Resource$Events$List = {
        calendarId: calendar.calendarId,
        maxResults: this.#options.pageSize ?? 2500,
        singleEvents: false,
        ...query,
        ...(token ? { pageToken: token } : {})
      }
      const { data } = await this.#call(context, 'events.list', async (api) => await api.events.list(params))
      return data
    }
    const last = await takePagesReadingAhead(await read(pageToken),
      (data) => data.nextPageToken ? read(data.nextPageToken) : null,
      async (data) => {
        const events = (data.items ?? []).map((item) => toProviderEvent(item, data.timeZone ?? calendar.timeZone)).filter((event): event is ProviderEvent => event !== null)
        await sink({ events, nextPageToken: data.nextPageToken ?? null })
      })
    return last.nextSyncToken ?? null
  }

  #mapped (data: CalendarV3.Schema$Event, calendar: ProviderCalendar): ProviderEvent {
    const event = toProviderEvent(data, calendar.timeZone)
    if (event === null) throw new Error('Google answered a write with an event it cannot describe')
    return event
  }

  #oauthClient (credentials?: Credentials): OAuth2Client {
    const { clientId, clientSecret, endpointBase } = this.#options
    const client = new OAuth2Client({
      clientId,
      clientSecret,
      // Token requests and every Calendar API call (googleapis sends them through this client).
      transporterOptions: { fetchImplementation: googleFetch },
      ...(endpointBase === undefined
        ? {}
        : { endpoints: googleLibraryEndpointsAt(new URL(endpointBase).origin), issuers: [new URL(endpointBase).origin] })
    })
    if (credentials) client.setCredentials(credentials)
    return client
  }

  /**
   * One Calendar API call for a connection. An access token Google refuses before its expiry
   * (revoked, or expired by Google's clock rather than ours) is dropped and the call made once more
   * with a fresh one; a dead grant then shows as invalid_grant. Other refusals, rate limits among
   * them, are not retried here: the job ladder does that.
   */
  async #call<T> (context: ProviderContext, what: string, run: (api: CalendarV3.Calendar) => Promise<T>): Promise<T> {
    try {
      return await run(this.#api(context))
    } catch (error) {
      if (failureOf(error).status !== 401) throw translate(error, what)
    }
    this.#clients.delete(context.connectionId)
    return await call(what, async () => await run(this.#api(context)))
  }

  /** The Calendar API acting for a connection; its client keeps and refreshes the access token. */
  #api (context: ProviderContext): CalendarV3.Calendar {
    const refreshToken = context.credential['refreshToken']
    if (!refreshToken) throw new ProviderAuthorizationRevokedError('the stored Google credential has no refresh token')
    let cached = this.#clients.get(context.connectionId)
    if (cached?.refreshToken !== refreshToken) {
      const fresh = this.#freshGrants.take(refreshToken)
      cached = { refreshToken, client: this.#oauthClient({ refresh_token: refreshToken, ...(fresh === undefined ? {} : { access_token: fresh.accessToken, expiry_date: fresh.expiresAt }) }) }
      setBounded(this.#clients, context.connectionId, cached, CLIENT_CACHE_SIZE)
    }
    return calendar({
      version: 'v3',
      auth: cached.client,
      timeout: this.#options.timeoutMs ?? 30_000,
      retry: false,
      ...(this.#rootUrl === undefined ? {} : { rootUrl: this.#rootUrl })
    })
  }
}
