// The Microsoft adapter of the provider port: the identity platform v2 (authorization code flow with
// PKCE, refresh tokens that rotate on every use) and Microsoft Graph v1.0 calendars, calendar-view
// delta queries and change-notification subscriptions, over plain HTTP (fetch). Production talks to
// login.microsoftonline.com and graph.microsoft.com; a development configuration
// (extprovider2.endpointBase) points both at one origin that serves Microsoft's paths.
import { DateTime } from 'luxon'
import { takePagesReadingAhead } from '../read-ahead.js'
import { bufferedFetch } from '../buffered-fetch.js'
import { retryAfterMs } from '../../../lib/backoff.js'
import { compileSeries, expandSeries, hasOccurrenceAt, RecurrenceRuleError } from '../../../lib/events/recurrence.js'
import type { EventContent, ProviderEvent } from '../../../schemas/sync/index.js'
import type { ProviderCredential } from '../../lib/credentials.js'
import { providerVersionWins } from '../../lib/provider-sync.js'
import { planWrite } from '../../lib/merge.js'
import {
  classifyFailure, contentOf, graphFieldsOf, graphRecurrenceOf, rruleLines, sameTiming, toProviderEvent, transactionIdFor
} from '../../lib/providers/microsoft-mapping.js'
import type { GraphEvent, GraphFailure, MicrosoftFailureKind } from '../../lib/providers/microsoft-mapping.js'
import { ianaZoneOf } from '../../lib/windows-zones.js'
import { contentTiming, exceptionMover, followedFields, movedExclusions, seriesMove, type ExceptionTiming } from '../../../lib/events/series-move.js'
import { eventInstant } from '../../../lib/events/time.js'
import { ProviderAuthorizationRevokedError, ProviderNotFoundError, ProviderUnavailableError, ProviderRejectedError } from '../../lib/providers/port.js'
import { colorOf, providerError, type ProviderFailureKind } from '../../lib/providers/port.js'
import { grantsMicrosoftScope, MICROSOFT_CALENDAR_SCOPE, MICROSOFT_MAILBOX_SETTINGS_SCOPE, MICROSOFT_SCOPES } from '../../../lib/identity-providers.js'
import type {
  AuthorizationRequest, GrantedCredential, ImportRequest, ImportResult, ProviderCalendar, ProviderContext, ProviderEventSink,
  ProviderPort, ProviderWrite, PullResult, Watch, WatchRequest, WriteResult
} from '../../lib/providers/port.js'
import { idTokenIdentity } from '../../lib/providers/id-token.js'

export { MICROSOFT_CALENDAR_SCOPE, MICROSOFT_MAILBOX_SETTINGS_SCOPE }
// A refresh may only name scopes the grant holds (else AADSTS65001, taken for a revocation), and grants
// made before the mailbox scope was asked for lack it (a grant without it keeps calendars in UTC): it
// is asked for at consent (here and at a Microsoft sign-in), and on refresh only when the stored grant has it.
const CONSENT_SCOPES = MICROSOFT_SCOPES
const SCOPES = CONSENT_SCOPES.filter((scope) => scope !== MICROSOFT_MAILBOX_SETTINGS_SCOPE)

const DAY_MS = 24 * 60 * 60_000
/**
 * Series read at once while a page is mapped. Outlook serves 4 concurrent requests per app and
 * mailbox (Microsoft Graph throttling limits, "Outlook service limits"); one is left for the
 * mailbox's other calendars, which the worker may pull meanwhile.
 */
const SERIES_READS_AT_ONCE = 3
/** Graph takes at most 20 requests in one JSON batch: the master and the instances of ten series. */
const BATCH_REQUESTS_MAX = 20

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
/** The whole range an import and its delta cursor cover: a year back, two years ahead. */
export const FULL_RANGE = { beforeMs: 365 * DAY_MS, afterMs: 730 * DAY_MS }
/** Graph keeps a calendar subscription "under 7 days" (10,080 minutes at most). */
const SUBSCRIPTION_MAX_MS = 10_080 * 60_000 - 5 * 60_000
/** An access token is refreshed this long before Microsoft's expiry, so no call carries a dying one. */
const EXPIRY_MARGIN_MS = 60_000
const CLIENT_CACHE_SIZE = 1000
/**
 * Occurrence ids seen in delta rounds, with their series: Graph tells of a deleted occurrence by its
 * id alone. Bounded; an id no longer known costs a check of every series of the calendar instead.
 */
const SEEN_IDS_SIZE = 50_000
/** Exceptions moved further than this from their original start may be taken for deleted occurrences. */
const MOVED_EXCEPTION_MARGIN_MS = 31 * DAY_MS
/** The contract's recurrence holds at most 20 lines of at most 1024 characters, one of them the RRULE. */
const EXDATE_LINES_MAX = 19
const EXDATE_LINE_LENGTH = 1024
/** A daily series over the whole range has about 1,100 occurrences. */
const OCCURRENCES_MAX = 5000
/**
 * What a window pass read of its series is kept this long, and for this many calendars, for the full
 * pass of the same import that follows it at once (a job ended between the two reads them again).
 */
const IMPORT_MEMORY_MS = 15 * 60_000
const IMPORT_MEMORY_SIZE = 200

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
/** An instance's original start (Graph writes it in UTC, without the Z). */
function originalStartOf (instance: GraphEvent): number {
  const text = instance.originalStart ?? ''
  return new Date(/(Z|[+-]\d{2}:\d{2})$/.test(text) ? text : `${text}Z`).getTime()
}

/**
 * EXDATE lines for the occurrences of the rule, within the range the calendar is synchronised over,
 * that are not among the series' instances at Graph (`present`, by occurrenceKey), expanded as the
 * backend expands them.
 */
function missingOccurrences (content: EventContent, present: Set<string>, now: Date): string[] {
  let series: ReturnType<typeof compileSeries>
  try {
    series = compileSeries({ startDate: content.startDate, endDate: content.endDate, isAllDay: content.isAllDay, timeZone: content.timeZone, rule: content.recurrence ?? [] })
  } catch (error) {
    // The backend refuses such a rule anyway; there is nothing to exclude from.
    if (error instanceof RecurrenceRuleError) return []
    throw error
  }
  // A series of N occurrences with N of them listed lacks none: the rule need not be expanded.
  const total = occurrenceCount(content.recurrence ?? [])
  if (total !== null && present.size >= total) return []
  const from = new Date(now.getTime() - FULL_RANGE.beforeMs)
  const to = new Date(now.getTime() + FULL_RANGE.afterMs)
  // Only occurrences wholly inside the range: Graph lists every such one that still exists.
  const expected = expandSeries(series, from, to, OCCURRENCES_MAX).filter((occurrence) => occurrence.start >= from && occurrence.end <= to)
  let missing = expected.filter((occurrence) => !present.has(content.isAllDay ? occurrence.startDate : String(occurrence.start.getTime())))
  if (missing.length === 0) return []
  const head = content.isAllDay ? 'EXDATE;VALUE=DATE' : 'EXDATE'
  const value = (start: Date, startDate: string): string => content.isAllDay
    ? startDate.replaceAll('-', '')
    : DateTime.fromJSDate(start).toUTC().toFormat("yyyyMMdd'T'HHmmss'Z'")
  const perLine = Math.floor((EXDATE_LINE_LENGTH - head.length) / (value(now, '2000-01-01').length + 1))
  if (missing.length > perLine * EXDATE_LINES_MAX) {
    // More than the contract holds: those nearest today matter most.
    const distance = (start: Date): number => Math.abs(start.getTime() - now.getTime())
    const kept = new Set([...missing].sort((a, b) => distance(a.start) - distance(b.start)).slice(0, perLine * EXDATE_LINES_MAX))
    missing = missing.filter((occurrence) => kept.has(occurrence))
  }
  return exdateLines(head, missing.map((occurrence) => value(occurrence.start, occurrence.startDate)))
}

/**
 * The occurrences of a series deleted at Graph before its pattern or times are written (missing
 * among its instances: Graph keeps no list of them, and brings them all back on such a write), as
 * EXDATE lines moved with the series to `to` (lib/events/series-move.ts), so they are deleted
 * again; `beyondRule`: some of them are not excluded by `to`'s own rule.
 */
function stillDeleted (from: EventContent, instances: GraphEvent[], to: EventContent, now: Date): { lines: string[], beyondRule: boolean } {
  const present = new Set(instances.flatMap((instance) => occurrenceKey(instance, from) ?? []))
  const excluded = missingOccurrences(from, present, now)
  const move = seriesMove(from, to)
  if (excluded.length === 0 || move === null) return { lines: [], beyondRule: false }
  const lines = movedExclusions(contentTiming({ ...from, recurrence: [...from.recurrence ?? [], ...excluded] }), contentTiming(to), move)
  const occurrences = (rule: string[]): number => expandSeries(compileSeries({ startDate: to.startDate, endDate: to.endDate, isAllDay: to.isAllDay, timeZone: to.timeZone, rule }),
    new Date(now.getTime() - FULL_RANGE.beforeMs), new Date(now.getTime() + FULL_RANGE.afterMs), OCCURRENCES_MAX).length
  let beyondRule: boolean
  try {
    beyondRule = occurrences([...to.recurrence ?? [], ...lines]) !== occurrences(to.recurrence ?? [])
  } catch (error) {
    if (error instanceof RecurrenceRuleError) return { lines, beyondRule: false }
    throw error
  }
  return { lines, beyondRule }
}

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

/** One answer of a JSON batch (Microsoft Graph, "Combine multiple HTTP requests using JSON batching"). */
interface GraphBatchAnswer {
  id: string
  status: number
  body?: unknown
}

/** A series as a batch read it: its master (null when Graph no longer has it) and the first page of its instances. */
interface SeriesPrefetch {
  master: GraphEvent | null
  instances?: GraphPage
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

/** A series as a pass read it: what was handed over, and each instance Graph listed with its version. */
interface SeriesRead {
  event: ProviderEvent
  /** Instance id -> its `@odata.etag` and its span (UTC ms). */
  instances: Map<string, { version: string | null, startMs: number, endMs: number }>
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

/** A failed Microsoft call, kept without the request (its headers hold the access token). */
class MicrosoftCallError extends Error {
  readonly failure: GraphFailure
  readonly retryAfterMs: number | null

  constructor (what: string, failure: GraphFailure, retryAfterMs: number | null) {
    super(`${what}: ${failure.status ?? 'no answer'}${failure.code ? ` ${failure.code}` : ''}`)
    this.failure = failure
    this.retryAfterMs = retryAfterMs
  }
}

/** How the port reads Microsoft's classes of failure. */
const MICROSOFT_FAILURES: Record<MicrosoftFailureKind, ProviderFailureKind> = {
  revoked: 'revoked', cursorExpired: 'cursorExpired', unavailable: 'unavailable', notFound: 'notFound', conflict: 'conflict', unauthorized: 'rejected', other: 'rejected'
}

/** The port's error for a failed call. */
function translate (error: MicrosoftCallError): Error {
  return providerError({ kind: MICROSOFT_FAILURES[classifyFailure(error.failure)], who: 'Microsoft', detail: error.message, status: error.failure.status, retryAfterMs: error.retryAfterMs })
}

/** Graph's UTC date-time (with or without its `Z`) as milliseconds; NaN when it is none. */
function utcMs (value: string | null | undefined): number {
  if (!value) return Number.NaN
  return Date.parse(value.endsWith('Z') || /[+-]\d{2}:\d{2}$/.test(value) ? value : `${value}Z`)
}

/** The version Graph gives an instance: an occurrence carries its series master's, an exception its own. */
function versionOf (instance: GraphEvent): string | null {
  return instance['@odata.etag'] ?? instance.changeKey ?? null
}

/**
 * Whether an instance may meet a calendar view's range. Graph's instance times are UTC, an all-day
 * one's its date at midnight: a day's margin on both sides takes in every instance the view may list
 * (and one without times counts as meeting it).
 */
function meets (span: { startMs: number, endMs: number }, range: { fromMs: number, toMs: number }): boolean {
  return !(span.startMs >= range.toMs + DAY_MS) && !(span.endMs <= range.fromMs - DAY_MS)
}

/**
 * Which occurrence of the series an instance at Graph stands for: its original start (UTC), or for an
 * all-day series its date in the series' zone; an occurrence's own start is its original one.
 */
function occurrenceKey (instance: GraphEvent, content: EventContent): string | null {
  if (content.isAllDay) {
    if (instance.type === 'occurrence' && instance.start?.dateTime) return instance.start.dateTime.slice(0, 10)
    const ms = utcMs(instance.originalStart)
    return Number.isNaN(ms) ? null : DateTime.fromMillis(ms, { zone: content.timeZone }).toISODate()
  }
  let ms = utcMs(instance.originalStart)
  if (Number.isNaN(ms) && instance.type === 'occurrence') ms = utcMs(instance.start?.dateTime)
  return Number.isNaN(ms) ? null : String(ms)
}

/** The number of occurrences of a rule of one RRULE with a COUNT (Graph's numbered range); null for any other. */
function occurrenceCount (rule: string[]): number | null {
  const count = rule.length === 1 ? /^RRULE:(?:.*;)?COUNT=(\d+)(?:;|$)/.exec(rule[0] ?? '')?.[1] : undefined
  return count === undefined ? null : Number(count)
}

/** EXDATE lines of the given values, as few as fit the contract's line length. */
function exdateLines (head: string, values: string[]): string[] {
  const lines: string[] = []
  let current: string[] = []
  for (const value of values) {
    if (current.length > 0 && head.length + 1 + [...current, value].join(',').length > EXDATE_LINE_LENGTH) {
      lines.push(`${head}:${current.join(',')}`)
      current = []
    }
    current.push(value)
  }
  if (current.length > 0) lines.push(`${head}:${current.join(',')}`)
  return lines
}

export class MicrosoftCalendarAdapter implements ProviderPort {
  readonly provider = 'microsoft' as const
  readonly #options: MicrosoftAdapterOptions
  readonly #login: string
  readonly #graph: string
  /** Access tokens by connection, with the refresh token they came from. */
  readonly #tokens = new Map<string, { refreshToken: string, accessToken: string, expiresAt: number }>()
  readonly #refreshing = new Map<string, Promise<string>>()
  /** Graph ids seen in a calendar: an occurrence's with its series master's id, others with ''. */
  readonly #seen = new Map<string, string>()
  /** By connection and calendar: the series an import's window pass read, for its full pass. */
  readonly #importMemory = new Map<string, { at: number, series: Map<string, SeriesRead> }>()

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
    const tokens = await this.#token('token exchange', {
      grant_type: 'authorization_code',
      code: request.code,
      code_verifier: request.codeVerifier,
      redirect_uri: request.redirectUri,
      scope: CONSENT_SCOPES.join(' ')
    })
    const scope = tokens.scope ?? ''
    if (!grantsMicrosoftScope(scope, MICROSOFT_CALENDAR_SCOPE)) throw new MicrosoftScopeMissingError('the grant does not include the calendar permission')
    const claims = idTokenIdentity(tokens.id_token, { email: ['email', 'preferred_username'], subject: ['oid', 'sub'] })
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
    let next: string | null = `${this.#graph}/me/calendars?$top=100`
    while (next !== null) {
      const page: { value?: GraphCalendar[], '@odata.nextLink'?: string } = await this.#graphCall(context, 'calendars.list', 'GET', next)
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
    const first = `${this.#graph}/me/calendars/${encodeURIComponent(calendar.calendarId)}/calendarView/delta?` +
      new URLSearchParams({ startDateTime: window.from.toISOString(), endDateTime: window.to.toISOString() }).toString()
    const cursor = await this.#delta(context, calendar, request.pageToken ?? first, sink, this.#seriesMemory(context, calendar, request, window))
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
    // A report made before the backend learnt the id of our insert (created, then deleted or
    // changed while Graph was away) reaches the event that insert made.
    const target = subject.providerEventId ?? occurrence?.id ?? write.ownProviderEventId ?? null
    const current = target === null ? occurrence : await this.#current(context, target)
    const removal = write.operation === 'delete' || subject.cancelled === true

    // Microsoft's copy as our own last write left it (the same change key) is no change by another
    // device: its lastModifiedDateTime is when that write arrived, which can be after the backend's
    // change that this write carries (an event created and deleted here while Graph was down).
    // An occurrence Graph never changed carries its series' version (a series written after this
    // change was made, when the change waited for it): a change of it here is the newer one.
    const ownCopy = current !== null && ((write.ownVersion !== undefined && current['@odata.etag'] === write.ownVersion) || current.type === 'occurrence')
    // A change made there since the version this one was made on is merged with it, part by part.
    const theirs = removal || current === null || current.isCancelled === true ? null : contentOf(current, calendar.timeZone)
    const plan = removal ? null : planWrite(subject, current === null ? null : { ...(theirs === null ? {} : { content: theirs }), updated: this.#updated(current) }, ownCopy)
    if (current !== null && (plan === null ? !ownCopy && providerVersionWins(this.#updated(current), subject.lastUpdated) : plan.kind === 'theirs')) {
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

    const content = plan?.kind === 'write' ? plan.content : subject.content
    if (content === undefined) throw new Error('a provider write of a live event needs its content')
    if (current !== null) {
      // The pattern is written only when it changed: Graph drops a series' exceptions on every write of it.
      const held = current.type === 'seriesMaster' && current.recurrence ? rruleLines(current.recurrence, current.isAllDay === true, content.timeZone) : null
      // Exclusions are Graph's deleted occurrences read back (a series master has no list of them to write).
      const pattern = content.recurrence?.filter((line) => line.startsWith('RRULE'))
      const recurrence = current.type !== 'occurrence' && current.type !== 'exception' && pattern !== undefined &&
        JSON.stringify(held) !== JSON.stringify(pattern)
      // Likewise its times, which Graph takes as a new timing of the series even when unchanged.
      const times = recurrence || current.type !== 'seriesMaster' || !sameTiming(current, content, calendar.timeZone)
      // Graph drops the exceptions of a series whose pattern is written: they are read first and
      // written again afterwards where their occurrence is still one of the series.
      // (and so does a change of its times: the exceptions move with the series, as they do here).
      const series = current.type === 'seriesMaster' ? contentOf(current, calendar.timeZone) : null
      const kept = (recurrence || times) && series !== null ? await this.#instances(context, current.id) : []
      const patched: GraphEvent = await this.#graphCall(context, 'event.update', 'PATCH', `${this.#graph}/me/events/${encodeURIComponent(current.id)}`,
        graphFieldsOf(pattern === undefined ? content : { ...content, recurrence: pattern }, { recurrence, times }), ifMatch)
      let merged = plan?.kind === 'write' && plan.merged
      if (kept.length > 0 && series !== null) {
        const from = { ...series, recurrence: held ?? [] }
        const deleted = stillDeleted(from, kept, content, this.#now())
        await this.#restoreExceptions(context, current.id, kept, from, { ...content, recurrence: [...content.recurrence ?? [], ...deleted.lines] }, calendar.timeZone)
        // Deletions the backend's rule did not name (its own, or another device's) reach it with the series.
        merged ||= deleted.beyondRule
      }
      return { outcome: merged ? 'merged' : 'written', event: await this.#mapped(context, patched.id === current.id && kept.length > 0 ? await this.#current(context, current.id) ?? patched : patched, calendar) }
    }
    if (subject.providerEventId !== undefined || subject.seriesProviderEventId !== undefined) {
      throw new ProviderNotFoundError(`Microsoft has no event ${subject.providerEventId === undefined ? 'occurrence' : 'with the linked id'} to change`)
    }
    // A pattern holds no exclusions: a new series' EXDATE occurrences are deleted once it exists.
    const pattern = content.recurrence?.filter((line) => line.startsWith('RRULE'))
    if (pattern !== undefined && pattern.length > 0 && graphRecurrenceOf(pattern, content.startDate, content.timeZone) === null) {
      // Sent without it, the series would come back as one event and its other occurrences be lost here.
      throw new ProviderRejectedError(`Microsoft has no recurrence pattern for ${pattern.join(' ')}`, null)
    }
    const body = { ...graphFieldsOf(pattern === undefined ? content : { ...content, recurrence: pattern }, { recurrence: true }), transactionId: transactionIdFor(context.connectionId, write.eventId) }
    let created: GraphEvent = await this.#graphCall(context, 'event.create', 'POST', `${this.#graph}/me/calendars/${encodeURIComponent(calendar.calendarId)}/events`, body)
    if (pattern !== undefined && pattern.length !== content.recurrence?.length) await this.#deleteExcluded(context, created.id, content)
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

  async renewWatch (context: ProviderContext, watch: { channelId: string, resourceId: string }, expiresAt: Date, options: { reauthorize?: boolean } = {}): Promise<Watch> {
    // An access token outlives a revoked grant by up to an hour; the refresh behind a new one is
    // what answers invalid_grant (Microsoft: on reauthorizationRequired, acquire a new token).
    if (options.reauthorize === true) this.#tokens.delete(context.connectionId)
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
    this.#importMemory.set(key, { at: this.#now().getTime(), series: learnt })
    if (this.#importMemory.size > IMPORT_MEMORY_SIZE) {
      const oldest = this.#importMemory.keys().next().value
      if (oldest !== undefined) this.#importMemory.delete(oldest)
    }
    return { learnt, range: span }
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
   * A deleted occurrence comes as `@removed` with its id only, and its series master keeps no list
   * of them: the series is read again and sent with the occurrences Graph no longer has as EXDATEs.
   */
  async #delta (context: ProviderContext, calendar: ProviderCalendar, link: string, sink: ProviderEventSink, memory?: SeriesMemory): Promise<string> {
    const masters = new Set<string>()
    const reuse = memory?.reuse
    /** Instances of the series taken from the window pass that this pass listed as they were then. */
    const listedAgain = new Set<string>()
    let everySeriesChecked = false
    const headers = this.#pageSizeHeader()
    /** One page read, with the series it names: what the sink is handed, and where the round goes on. */
    const readPage = async (next: string): Promise<{ events: ProviderEvent[], nextLink: string | null, deltaLink: string | undefined }> => {
      const page: GraphPage = await this.#graphCall(context, 'calendarView.delta', 'GET', next, undefined, headers)
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
        const master = batched === undefined ? await this.#current(context, masterId) : batched.master
        const read: SeriesRead['instances'] = new Map()
        const mapped = master === null
          // Graph answers a deleted series as its occurrences removed, never the master itself.
          ? { providerEventId: masterId, updated: now.toISOString(), status: 'cancelled' as const }
          : await this.#seriesEvent(context, master, calendar, now, read, batched?.instances)
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
          const seriesId = this.#seen.get(item.id)
          if (seriesId === undefined) unknownRemoval = true
          else if (seriesId !== '') seriesOfPage.push(seriesId)
        } else {
          if (item.id) this.#remember(item.id, item.seriesMasterId ?? '')
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
        seriesOfPage.push(...await this.#seriesIds(context, calendar))
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
      prefetched = await this.#readSeries(context, [...new Set(seriesOfPage)].filter((masterId) => !masters.has(masterId) && reuse?.get(masterId) === undefined), now)
      await eachAtMost(SERIES_READS_AT_ONCE, seriesOfPage, sendSeries)
      return { events, nextLink, deltaLink: page['@odata.deltaLink'] }
    }
    // The next page, with its series, is read from Graph while the sink applies the current one.
    const last = await takePagesReadingAhead(await readPage(link),
      (page) => page.nextLink === null ? null : readPage(page.nextLink),
      async (page) => { await sink({ events: page.events, nextPageToken: page.nextLink }) })
    if (!last.deltaLink) throw new Error('Microsoft ended a delta round without a deltaLink')
    return last.deltaLink
  }

  #remember (id: string, seriesId: string): void {
    this.#seen.delete(id)
    this.#seen.set(id, seriesId)
    if (this.#seen.size > SEEN_IDS_SIZE) {
      const oldest = this.#seen.keys().next().value
      if (oldest !== undefined) this.#seen.delete(oldest)
    }
  }

  /** The ids of the calendar's series masters (`/events` lists single events and masters, not occurrences). */
  async #seriesIds (context: ProviderContext, calendar: ProviderCalendar): Promise<string[]> {
    const ids: string[] = []
    let next: string | null = `${this.#graph}/me/calendars/${encodeURIComponent(calendar.calendarId)}/events?` +
      new URLSearchParams({ $select: 'id,type', $top: String(this.#options.pageSize ?? 500) }).toString()
    while (next !== null) {
      const page: GraphPage = await this.#graphCall(context, 'event.list', 'GET', next)
      for (const item of page.value ?? []) {
        this.#remember(item.id, '')
        if (item.type === 'seriesMaster') ids.push(item.id)
      }
      next = page['@odata.nextLink'] ?? null
    }
    return ids
  }

  /** A series master as the backend is told of it: its rule, and the occurrences Graph no longer has as EXDATEs. */
  async #seriesEvent (context: ProviderContext, master: GraphEvent, calendar: ProviderCalendar, now: Date, read?: SeriesRead['instances'], firstInstances?: GraphPage): Promise<ProviderEvent | null> {
    const mapped = toProviderEvent(master, calendar.timeZone, now)
    const content = mapped?.content
    if (mapped === null || content?.recurrence === undefined) return mapped
    const excluded = await this.#deletedOccurrences(context, master.id, content, now, read, firstInstances)
    return excluded.length === 0 ? mapped : { ...mapped, content: { ...content, recurrence: [...content.recurrence, ...excluded] } }
  }

  /**
   * EXDATE lines for the occurrences of the rule, within the range the calendar is synchronised over,
   * that are not among the series' instances at Graph (expanded as the backend expands them).
   */
  async #deletedOccurrences (context: ProviderContext, masterId: string, content: EventContent, now: Date, read?: SeriesRead['instances'], firstPage?: GraphPage): Promise<string[]> {
    const present = new Set<string>()
    let given = firstPage
    let next: string | null = this.#graph + this.#seriesInstancesPath(masterId, now)
    const headers = this.#pageSizeHeader()
    while (next !== null) {
      const page: GraphPage = given ?? await this.#graphCall(context, 'event.instances', 'GET', next, undefined, headers)
      given = undefined
      for (const instance of page.value ?? []) {
        const key = occurrenceKey(instance, content)
        if (key !== null) present.add(key)
        this.#remember(instance.id, masterId)
        read?.set(instance.id, { version: versionOf(instance), startMs: utcMs(instance.start?.dateTime), endMs: utcMs(instance.end?.dateTime) })
      }
      next = page['@odata.nextLink'] ?? null
    }
    return missingOccurrences(content, present, now)
  }

  /**
   * The zone of the mailbox (Outlook's setting, a Windows or IANA name) as an IANA name. UTC when it
   * cannot be read: a grant from before the mailbox scope was asked for, or a custom zone.
   */
  async #mailboxZone (context: ProviderContext): Promise<string> {
    try {
      const settings: GraphMailboxSettings = await this.#graphCall(context, 'mailboxSettings.get', 'GET', `${this.#graph}/me/mailboxSettings`)
      return ianaZoneOf(settings.timeZone) ?? 'UTC'
    } catch (error) {
      // Only a refusal of this read falls back; a dead grant or an unavailable Graph stops the job as any call would.
      if (error instanceof ProviderUnavailableError || error instanceof ProviderAuthorizationRevokedError) throw error
      return 'UTC'
    }
  }

  /** Every instance of a series over the synchronised range (and a margin for moved exceptions). */
  async #instances (context: ProviderContext, masterId: string): Promise<GraphEvent[]> {
    const found: GraphEvent[] = []
    // Whole instances: their content is written back onto the new pattern.
    let next: string | null = this.#graph + this.#seriesInstancesPath(masterId, this.#now(), null)
    while (next !== null) {
      const page: GraphPage = await this.#graphCall(context, 'event.instances', 'GET', next, undefined, this.#pageSizeHeader())
      found.push(...page.value ?? [])
      next = page['@odata.nextLink'] ?? null
    }
    return found
  }

  /** The occurrences of a series Graph holds that its rule excludes (EXDATE) are deleted there. */
  async #deleteExcluded (context: ProviderContext, masterId: string, content: EventContent): Promise<void> {
    let series: ReturnType<typeof compileSeries>
    try {
      series = compileSeries({ startDate: content.startDate, endDate: content.endDate, isAllDay: content.isAllDay, timeZone: content.timeZone, rule: content.recurrence ?? [] })
    } catch (error) {
      if (error instanceof RecurrenceRuleError) return
      throw error
    }
    for (const instance of await this.#instances(context, masterId)) {
      const original = content.isAllDay
        ? eventInstant((instance.start?.dateTime ?? '').slice(0, 10), true, content.timeZone)
        : new Date(originalStartOf(instance))
      if (Number.isNaN(original.getTime()) || hasOccurrenceAt(series, original)) continue
      await this.#graphCall(context, 'event.delete', 'DELETE', `${this.#graph}/me/events/${encodeURIComponent(instance.id)}`)
    }
  }

  /**
   * After a series' pattern or times were written: its former exceptions are written again on
   * their occurrence as it moved with the series (the backend's rule, lib/events/series-move.ts:
   * gone where the changed series has no such occurrence), and occurrences the series excludes
   * (EXDATE, deleted at Microsoft before, moved with it) are deleted again, so a "this and
   * following" cut or a move of the series loses nothing.
   */
  async #restoreExceptions (context: ProviderContext, masterId: string, before: GraphEvent[], from: EventContent, to: EventContent, calendarTimeZone: string): Promise<void> {
    const originalOf = originalStartOf
    const mover = exceptionMover(contentTiming(from), contentTiming(to))
    const exceptions = new Map<number, { own: EventContent, times: ExceptionTiming }>()
    for (const instance of before) {
      if (instance.type !== 'exception' || instance.isCancelled === true || mover === null) continue
      const own = contentOf(instance, calendarTimeZone)
      const times = own === null ? null : mover({ originalStartDate: new Date(originalOf(instance)).toISOString(), startDate: own.startDate, endDate: own.endDate })
      if (own !== null && times !== null) exceptions.set(eventInstant(times.originalStartDate, to.isAllDay, to.timeZone).getTime(), { own, times })
    }
    let series: ReturnType<typeof compileSeries> | null = null
    try {
      series = compileSeries({ startDate: to.startDate, endDate: to.endDate, isAllDay: to.isAllDay, timeZone: to.timeZone, rule: to.recurrence ?? [] })
    } catch (error) {
      if (!(error instanceof RecurrenceRuleError)) throw error
    }
    for (const instance of await this.#instances(context, masterId)) {
      const original = originalOf(instance)
      const url = `${this.#graph}/me/events/${encodeURIComponent(instance.id)}`
      if (series !== null && !to.isAllDay && !hasOccurrenceAt(series, new Date(original))) {
        await this.#graphCall(context, 'event.delete', 'DELETE', url)
        continue
      }
      const exception = exceptions.get(original)
      if (exception === undefined) continue
      const { own, times } = exception
      // The series' new text reaches an exception that had its old text, as Graph does for an exception it keeps.
      await this.#graphCall(context, 'event.update', 'PATCH', url, graphFieldsOf({ ...own, ...followedFields(from, to, own), startDate: times.startDate, endDate: times.endDate, recurrence: undefined }, { recurrence: false }))
    }
  }

  /**
   * A series' instances over the synchronised range, as a path below the Graph version: by default
   * only what tells which occurrences exist and their versions; `null` asks for whole instances.
   */
  #seriesInstancesPath (masterId: string, now: Date, fields: string | null = 'id,type,start,end,originalStart,isAllDay,changeKey'): string {
    return `/me/events/${encodeURIComponent(masterId)}/instances?` + new URLSearchParams({
      // Wider than the range, so an exception moved across its edge still shows its original start.
      startDateTime: new Date(now.getTime() - FULL_RANGE.beforeMs - MOVED_EXCEPTION_MARGIN_MS).toISOString(),
      endDateTime: new Date(now.getTime() + FULL_RANGE.afterMs + MOVED_EXCEPTION_MARGIN_MS).toISOString(),
      ...(fields === null ? {} : { $select: fields })
    }).toString()
  }

  #pageSizeHeader (): Record<string, string> {
    return { Prefer: `odata.maxpagesize=${this.#options.pageSize ?? 500}` }
  }

  /**
   * The master and the first page of instances of each series, through JSON batches of ten series.
   * Only what Graph answered is kept: a master it no longer has (404) as null, and each 200. A
   * series with any other answer (throttled, failed) is left out, to be read on its own.
   */
  async #readSeries (context: ProviderContext, masterIds: string[], now: Date): Promise<Map<string, SeriesPrefetch>> {
    const read = new Map<string, SeriesPrefetch>()
    const perBatch = BATCH_REQUESTS_MAX / 2
    // A single series gains nothing from a batch.
    if (masterIds.length < 2) return read
    for (let at = 0; at < masterIds.length; at += perBatch) {
      const chunk = masterIds.slice(at, at + perBatch)
      const requests = chunk.flatMap((masterId, index) => [
        { id: `m${index}`, method: 'GET', url: `/me/events/${encodeURIComponent(masterId)}` },
        { id: `i${index}`, method: 'GET', url: this.#seriesInstancesPath(masterId, now), headers: this.#pageSizeHeader() }
      ])
      const answer: { responses?: GraphBatchAnswer[] } = await this.#graphCall(context, 'batch', 'POST', `${this.#graph}/$batch`, { requests })
      // Graph answers in any order: each answer names its request.
      const byId = new Map((answer.responses ?? []).map((response) => [response.id, response]))
      chunk.forEach((masterId, index) => {
        const master = byId.get(`m${index}`)
        const instances = byId.get(`i${index}`)
        if (master?.status === 404) read.set(masterId, { master: null })
        else if (master?.status === 200 && instances?.status === 200) read.set(masterId, { master: master.body as GraphEvent, instances: instances.body as GraphPage })
      })
    }
    return read
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
    if (event.type === 'seriesMaster') {
      // Sent without its exclusions, a master would bring back the occurrences deleted at Microsoft.
      const series = await this.#seriesEvent(context, event, calendar, this.#now())
      if (series !== null) return series
    }
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
    // Requests running side by side share one refresh: Microsoft rotates the refresh token on use.
    const inFlight = this.#refreshing.get(context.connectionId)
    if (inFlight !== undefined) return await inFlight
    const refreshing = this.#refresh(context, refreshToken)
    this.#refreshing.set(context.connectionId, refreshing)
    try {
      return await refreshing
    } finally {
      this.#refreshing.delete(context.connectionId)
    }
  }

  async #refresh (context: ProviderContext, refreshToken: string): Promise<string> {
    const scopes = grantsMicrosoftScope(context.credential['scope'] ?? '', MICROSOFT_MAILBOX_SETTINGS_SCOPE) ? CONSENT_SCOPES : SCOPES
    const tokens = await this.#token('token refresh', { grant_type: 'refresh_token', refresh_token: refreshToken, scope: scopes.join(' ') })
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
      return await bufferedFetch(url, { ...init, signal: AbortSignal.timeout(this.#options.timeoutMs ?? 30_000) })
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

// Graph sends Retry-After with its 429 and 503 answers (Microsoft Graph throttling guidance).
function retryAfterOf (response: Response): number | null {
  return retryAfterMs(response.headers.get('retry-after'), new Date())
}
