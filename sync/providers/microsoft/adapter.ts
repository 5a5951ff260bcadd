// The Microsoft adapter of the provider port: the identity platform v2 (authorization code flow with
// PKCE, refresh tokens that rotate on every use) and Microsoft Graph v1.0 calendars, calendar-view
// delta queries and change-notification subscriptions, over plain HTTP (fetch). Production talks to
// login.microsoftonline.com and graph.microsoft.com; a development configuration
// (extprovider2.endpointBase) points both at one origin that serves Microsoft's paths.
import { grantsMicrosoftScope, MICROSOFT_CALENDAR_SCOPE } from '../../../lib/identity-providers.js'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import { idTokenIdentity } from '../../lib/providers/id-token.js'
import { toProviderEvent } from '../../lib/providers/microsoft-mapping.js'
import { FULL_RANGE, meets, versionOf } from '../../lib/providers/microsoft-series.js'
import {
  colorOf, ProviderAuthorizationRevokedError, ProviderNotFoundError, ProviderUnavailableError,
  type AuthorizationRequest, type GrantedCredential, type ImportRequest, type ImportResult, type ProviderCalendar, type ProviderContext,
  type ProviderEventSink, type ProviderPort, type ProviderWrite, type PullResult, type Watch, type WatchRequest, type WriteResult
} from '../../lib/providers/port.js'
import { ianaZoneOf } from '../../lib/windows-zones.js'
import { takePagesReadingAhead } from '../read-ahead.js'
import { CONSENT_SCOPES, MicrosoftGraph, type MicrosoftGraphOptions } from './graph.js'
import { MicrosoftSeriesReader, type GraphPage, type SeriesPrefetch, type SeriesRead } from './series-reader.js'
import { MicrosoftWriter } from './writes.js'
import { setBounded } from '../../lib/bounded-map.js'

/**
 * Series read at once while a page is mapped. Outlook serves 4 concurrent requests per app and
 * mailbox (Microsoft Graph throttling limits, "Outlook service limits"); one is left for the
 * mailbox's other calendars, which the worker may pull meanwhile.
 */
const SERIES_READS_AT_ONCE = 3
/**
 * Delta pages read ahead of the one the backend applies (one request at a time: each page names the
 * next). The sink hands a thousand events over at once, a round trip that takes as long as reading
 * a few pages of 500 with their series.
 */
const DELTA_PAGES_AHEAD = 4

/** Graph keeps a calendar subscription "under 7 days" (10,080 minutes at most). */
const SUBSCRIPTION_MAX_MS = 10_080 * 60_000 - 5 * 60_000
/**
 * What a window pass read of its series is kept this long, and for this many calendars, for the full
 * pass of the same import that follows it at once (a job ended between the two reads them again).
 */
const IMPORT_MEMORY_MS = 15 * 60_000
const IMPORT_MEMORY_SIZE = 200

/** Runs `work` for every item, at most `limit` at a time; the first failure is thrown once all settled. */
async function eachAtMost<T> (limit: number, items: T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T
      await work(item)
    }
  })
  const results = await Promise.allSettled(lanes)
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected')
  if (failed !== undefined) throw failed.reason
}

export interface MicrosoftAdapterOptions extends MicrosoftGraphOptions {
  /** Events per delta page (`Prefer: odata.maxpagesize`, at most 1000). */
  pageSize?: number
  /** The service's clock: where the import range and subscription lifetimes are counted from. */
  now?: () => Date
}

/** The grant does not include the calendar permission (the person unticked it on the consent page). */
class MicrosoftScopeMissingError extends Error {
  override name = 'MicrosoftScopeMissingError'
}

interface GraphCalendar {
  id: string
  name?: string
  isDefaultCalendar?: boolean
  /** '#rrggbb', or empty when the user chose no colour (Graph's `color` then names a preset). */
  hexColor?: string
}

interface GraphMailboxSettings {
  timeZone?: string | null
}

interface GraphSubscription {
  id: string
  resource?: string
  expirationDateTime?: string
}

/**
 * The series an import's full pass may take from its window pass instead of reading them again:
 * `reuse` shrinks as the full pass sees a series' instances differ from those read then.
 */
interface SeriesMemory {
  /** Series read in this pass go here (a window pass). */
  learnt?: Map<string, SeriesRead>
  /** Series the window pass read (a full pass). */
  reuse?: Map<string, SeriesRead>
  /** The range of this pass (UTC ms): an instance read then and meeting it must be listed again. */
  range: { fromMs: number, toMs: number }
}

export class MicrosoftCalendarAdapter implements ProviderPort {
  readonly provider = 'microsoft' as const
  readonly #options: MicrosoftAdapterOptions
  readonly #microsoft: MicrosoftGraph
  readonly #reader: MicrosoftSeriesReader
  readonly #writer: MicrosoftWriter
  /** By connection and calendar: the series an import's window pass read, for its full pass. */
  readonly #importMemory = new Map<string, { at: number, series: Map<string, SeriesRead> }>()

  constructor (options: MicrosoftAdapterOptions) {
    this.#options = options
    this.#microsoft = new MicrosoftGraph(options)
    this.#reader = new MicrosoftSeriesReader(this.#microsoft, { pageSize: options.pageSize, now: () => this.#now() })
    this.#writer = new MicrosoftWriter(this.#microsoft, this.#reader, () => this.#now())
  }

  authorizationUrl (request: AuthorizationRequest): string {
    const url = new URL(`${this.#microsoft.login}/common/oauth2/v2.0/authorize`)
    url.search = new URLSearchParams({
      client_id: this.#options.clientId,
      response_type: 'code',
      redirect_uri: request.redirectUri,
      response_mode: 'query',
      scope: CONSENT_SCOPES.join(' '),
      state: request.state,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      // A new connection lets the person pick the account; a reconnect signs in silently when it can.
      ...(request.intent === 'connect' ? { prompt: 'select_account' } : {})
    }).toString()
    return url.toString()
  }

  async exchangeCode (request: { code: string, codeVerifier: string, redirectUri: string }): Promise<GrantedCredential> {
    const tokens = await this.#microsoft.token('token exchange', {
      grant_type: 'authorization_code',
      code: request.code,
      code_verifier: request.codeVerifier,
      redirect_uri: request.redirectUri,
      scope: CONSENT_SCOPES.join(' ')
    })
    const scope = tokens.scope ?? ''
    if (!grantsMicrosoftScope(scope, MICROSOFT_CALENDAR_SCOPE)) throw new MicrosoftScopeMissingError('the grant does not include the calendar permission')
    const claims = idTokenIdentity(tokens.id_token, { email: ['email', 'preferred_username'], subject: ['oid', 'sub'] })
    this.#microsoft.keepFreshGrant(tokens)
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
    const timeZone = await this.#mailboxZone(context)
    let next: string | null = `${this.#microsoft.base}/me/calendars?$top=100`
    while (next !== null) {
      const page: { value?: GraphCalendar[], '@odata.nextLink'?: string } = await this.#microsoft.call(context, 'calendars.list', 'GET', next)
      for (const entry of page.value ?? []) {
        if (!entry.id) continue
        // Graph's calendar has no zone of its own: the mailbox's is the one its owner sees it in.
        found.push({ calendarId: entry.id, name: entry.name ?? entry.id, primary: entry.isDefaultCalendar === true, timeZone, ...colorOf(entry.hexColor) })
      }
      next = page['@odata.nextLink'] ?? null
    }
    return found
  }

  async importCalendar (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink): Promise<ImportResult> {
    const now = this.#now().getTime()
    const window = request.window ?? { from: new Date(now - FULL_RANGE.beforeMs), to: new Date(now + FULL_RANGE.afterMs) }
    const first = `${this.#microsoft.base}/me/calendars/${encodeURIComponent(calendar.calendarId)}/calendarView/delta?` +
      new URLSearchParams({ startDateTime: window.from.toISOString(), endDateTime: window.to.toISOString() }).toString()
    const cursor = await this.#delta(context, calendar, request.pageToken ?? first, sink, this.#seriesMemory(context, calendar, request, window))
    return { cursor: request.window ? null : cursor }
  }

  async pullChanges (context: ProviderContext, calendar: ProviderCalendar, cursor: string, sink: ProviderEventSink): Promise<PullResult> {
    return { cursor: await this.#delta(context, calendar, cursor, sink) }
  }

  async writeEvent (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite): Promise<WriteResult> {
    return await this.#writer.writeEvent(context, calendar, write)
  }

  async watch (context: ProviderContext, calendarId: string, request: WatchRequest): Promise<Watch> {
    const resource = `me/calendars/${calendarId}/events`
    const subscription: GraphSubscription = await this.#microsoft.call(context, 'subscription.create', 'POST', `${this.#microsoft.base}/subscriptions`, {
      changeType: 'created,updated,deleted',
      notificationUrl: request.address,
      lifecycleNotificationUrl: request.address,
      resource,
      expirationDateTime: this.#expiry(request.expiresAt).toISOString(),
      clientState: request.token
    })
    return { channelId: subscription.id, resourceId: subscription.resource ?? resource, expiresAt: this.#expiresAt(subscription, request.expiresAt) }
  }

  async renewWatch (context: ProviderContext, watch: { channelId: string, resourceId: string }, expiresAt: Date, options: { reauthorize?: boolean } = {}): Promise<Watch> {
    // An access token outlives a revoked grant by up to an hour; the refresh behind a new one is
    // what answers invalid_grant (Microsoft: on reauthorizationRequired, acquire a new token).
    if (options.reauthorize === true) this.#microsoft.forgetAccessToken(context.connectionId)
    const subscription: GraphSubscription = await this.#microsoft.call(context, 'subscription.update', 'PATCH',
      `${this.#microsoft.base}/subscriptions/${encodeURIComponent(watch.channelId)}`, { expirationDateTime: this.#expiry(expiresAt).toISOString() })
    return { channelId: watch.channelId, resourceId: watch.resourceId, expiresAt: this.#expiresAt(subscription, expiresAt) }
  }

  async unwatch (context: ProviderContext, watch: { channelId: string, resourceId: string }): Promise<void> {
    try {
      await this.#microsoft.call(context, 'subscription.delete', 'DELETE', `${this.#microsoft.base}/subscriptions/${encodeURIComponent(watch.channelId)}`)
    } catch (error) {
      // A subscription that is already gone is stopped.
      if (!(error instanceof ProviderNotFoundError)) throw error
    }
  }

  #now (): Date {
    return this.#options.now?.() ?? new Date()
  }

  /**
   * The window pass of an import, from its first page, keeps what it reads of each series; the full
   * pass that follows, from its first page, takes it (once). A resumed pass has no such memory.
   */
  #seriesMemory (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, range: { from: Date, to: Date }): SeriesMemory | undefined {
    const key = `${context.connectionId}\n${calendar.calendarId}`
    const kept = this.#importMemory.get(key)
    this.#importMemory.delete(key)
    if (request.pageToken) return undefined
    const span = { fromMs: range.from.getTime(), toMs: range.to.getTime() }
    if (request.window === undefined) {
      return kept === undefined || this.#now().getTime() - kept.at > IMPORT_MEMORY_MS ? undefined : { reuse: kept.series, range: span }
    }
    const learnt = new Map<string, SeriesRead>()
    setBounded(this.#importMemory, key, { at: this.#now().getTime(), series: learnt }, IMPORT_MEMORY_SIZE)
    return { learnt, range: span }
  }

  #expiry (wanted: Date): Date {
    return new Date(Math.min(wanted.getTime(), this.#now().getTime() + SUBSCRIPTION_MAX_MS))
  }

  #expiresAt (subscription: GraphSubscription, fallback: Date): Date {
    const ms = subscription.expirationDateTime ? Date.parse(subscription.expirationDateTime) : Number.NaN
    return Number.isNaN(ms) ? this.#expiry(fallback) : new Date(ms)
  }

  /**
   * Every page of a delta round from `link` (the first request, a nextLink or a deltaLink), each
   * handed to the sink before the next is read. Masters are not part of a calendar view: the
   * master of each series seen is read once per round and sent with its rule before its exceptions.
   * A deleted occurrence comes as `@removed` with its id only, and its series master keeps no list
   * of them: the series is read again and sent with the occurrences Graph no longer has as EXDATEs.
   */
  async #delta (context: ProviderContext, calendar: ProviderCalendar, link: string, sink: ProviderEventSink, memory?: SeriesMemory): Promise<string> {
    const masters = new Set<string>()
    const reuse = memory?.reuse
    /** Instances of the series taken from the window pass that this pass listed as they were then. */
    const listedAgain = new Set<string>()
    let everySeriesChecked = false
    const headers = this.#reader.pageSizeHeader()
    /** One page read, with the series it names: what the sink is handed, and where the round goes on. */
    const readPage = async (next: string): Promise<{ events: ProviderEvent[], nextLink: string | null, deltaLink: string | undefined }> => {
      const page: GraphPage = await this.#microsoft.call(context, 'calendarView.delta', 'GET', next, undefined, headers)
      const now = this.#now()
      const events: ProviderEvent[] = []
      let prefetched = new Map<string, SeriesPrefetch>()
      const sendSeries = async (masterId: string): Promise<void> => {
        if (masters.has(masterId)) return
        masters.add(masterId)
        const known = reuse?.get(masterId)
        if (known !== undefined) {
          events.push(known.event)
          return
        }
        const batched = prefetched.get(masterId)
        const master = batched === undefined ? await this.#reader.current(context, masterId) : batched.master
        const read: SeriesRead['instances'] = new Map()
        const mapped = master === null
          // Graph answers a deleted series as its occurrences removed, never the master itself.
          ? { providerEventId: masterId, updated: now.toISOString(), status: 'cancelled' as const }
          : await this.#reader.seriesEvent(context, master, calendar, now, read, batched?.instances)
        if (mapped === null) return
        events.push(mapped)
        if (master !== null && read.size > 0) memory?.learnt?.set(masterId, { event: mapped, instances: read })
      }
      /** A series of the window pass changed since: it is read again, and sent again if it was already. */
      const readAgain = (masterId: string): void => {
        reuse?.delete(masterId)
        masters.delete(masterId)
      }
      let unknownRemoval = false
      const seriesOfPage: string[] = []
      for (const item of page.value ?? []) {
        if (item['@removed'] !== undefined) {
          const seriesId = this.#reader.seriesOf(item.id)
          if (seriesId === undefined) unknownRemoval = true
          else if (seriesId !== '') seriesOfPage.push(seriesId)
        } else {
          if (item.id) this.#reader.remember(item.id, item.seriesMasterId ?? '')
          if (item.seriesMasterId) {
            seriesOfPage.push(item.seriesMasterId)
            const held = reuse?.get(item.seriesMasterId)?.instances.get(item.id)
            // A new instance, or one of another version (an occurrence carries its master's): the series changed.
            if (held !== undefined && held.version !== null && held.version === versionOf(item)) listedAgain.add(item.id)
            else if (reuse?.has(item.seriesMasterId) === true) readAgain(item.seriesMasterId)
          }
        }
        const mapped = toProviderEvent(item, calendar.timeZone, now)
        if (mapped !== null) events.push(mapped)
      }
      if (unknownRemoval && !everySeriesChecked) {
        // Which series lost an occurrence is not known (the id was never seen here): every one is checked.
        everySeriesChecked = true
        seriesOfPage.push(...await this.#reader.seriesIds(context, calendar))
      }
      const nextLink = page['@odata.nextLink'] ?? null
      if (nextLink === null && reuse !== undefined && memory !== undefined) {
        // An occurrence deleted since the window pass is listed no more: its series is read again.
        for (const [masterId, known] of reuse) {
          const missing = [...known.instances].some(([id, span]) => !listedAgain.has(id) && meets(span, memory.range))
          if (missing) {
            readAgain(masterId)
            seriesOfPage.push(masterId)
          }
        }
      }
      // The series to read go to Graph in JSON batches (one round trip for ten); what a batch did not
      // answer is read on its own, a few at a time, each with its own retries.
      // A series a batch answered whole (no further page of instances to read) is mapped while the
      // next batch is on its way; the rest after the last.
      prefetched = await this.#reader.readSeries(context, [...new Set(seriesOfPage)].filter((masterId) => !masters.has(masterId) && reuse?.get(masterId) === undefined), now, async (answered) => {
        for (const [masterId, read] of answered) prefetched.set(masterId, read)
        for (const [masterId, read] of answered) if (read.instances?.['@odata.nextLink'] === undefined) await sendSeries(masterId)
      })
      await eachAtMost(SERIES_READS_AT_ONCE, seriesOfPage, sendSeries)
      return { events, nextLink, deltaLink: page['@odata.deltaLink'] }
    }
    // The next pages, with their series, are read from Graph while the sink applies the current one.
    const last = await takePagesReadingAhead(await readPage(link),
      (page) => page.nextLink === null ? null : readPage(page.nextLink),
      async (page) => { await sink({ events: page.events, nextPageToken: page.nextLink }) }, DELTA_PAGES_AHEAD)
    if (!last.deltaLink) throw new Error('Microsoft ended a delta round without a deltaLink')
    return last.deltaLink
  }

  /**
   * The zone of the mailbox (Outlook's setting, a Windows or IANA name) as an IANA name. UTC when it
   * cannot be read: a grant from before the mailbox scope was asked for, or a custom zone.
   */
  async #mailboxZone (context: ProviderContext): Promise<string> {
    try {
      const settings: GraphMailboxSettings = await this.#microsoft.call(context, 'mailboxSettings.get', 'GET', `${this.#microsoft.base}/me/mailboxSettings`)
      return ianaZoneOf(settings.timeZone) ?? 'UTC'
    } catch (error) {
      // Only a refusal of this read falls back; a dead grant or an unavailable Graph stops the job as any call would.
      if (error instanceof ProviderUnavailableError || error instanceof ProviderAuthorizationRevokedError) throw error
      return 'UTC'
    }
  }
}
