// The CalDAV adapter of the provider port (RFC 4791, RFC 6578): a server URL, a user name and an
// app password instead of OAuth. WebDAV requests are sent from here; their multistatus answers are
// parsed by tsdav's davRequest, off the event loop (dav-answers.ts); iCalendar goes through ical.js
// (sync/lib/providers/caldav-mapping.ts). CalDAV has no push, so the service pulls each calendar
// on a timer (pollIntervalMs).
import { retryAfterMs } from '../../../lib/backoff.js'
import ICAL from 'ical.js'
import type { DAVResponse } from 'tsdav'
import { providerFetch, type ProviderFetch } from '../buffered-fetch.js'
import { davResponsesOf } from './dav-answers.js'
import { AddressRefusedError, addressPolicy } from '../address-guard.js'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import type { ProviderCredential } from '../../lib/credentials.js'
import {
  addTimeZones, applyContent, contentOf, eventsOfResource, exclusionsOf, masterOf, moveExclusions, moveOverrides, newResource, occurrenceProperty, overrideId, overrideOf, parseResource, removeExclusion, removedResource, resourceNameFor, stampVersion,
  resourceOf, versionOf
} from '../../lib/providers/caldav-mapping.js'
import { providerVersionWins } from '../../lib/provider-sync.js'
import { planWrite } from '../../lib/merge.js'
import {
  ProviderAuthorizationRevokedError, ProviderCursorExpiredError, ProviderNotFoundError, ProviderUnavailableError,
  ProviderRejectedError, ProviderVersionConflictError
} from '../../lib/providers/port.js'
import { colorOf, providerError, type ProviderFailureKind } from '../../lib/providers/port.js'
import type {
  GrantedCredential, ImportRequest, ImportResult, ProviderCalendar, ProviderContext, ProviderEventSink, ProviderPort, ProviderWrite,
  PullResult, Watch, WriteResult
} from '../../lib/providers/port.js'

export interface CalDavAdapterOptions {
  /** Resources per page handed to the backend. */
  pageSize?: number
  /** Deadline of one server request. */
  timeoutMs?: number
  /** How long after its last pull a calendar is pulled again. */
  pollIntervalMs?: number
  /** The instant a removal is dated with (the service's clock). */
  now?: () => Date
  /**
   * How requests reach the server; by default a fetch that reaches only public addresses (and
   * those of `privateAddressAllowlist`) and reads at most `maxAnswerBytes` of an answer. Tests put
   * another client's change between two requests.
   */
  fetch?: ProviderFetch
  /** sync.privateAddressAllowlist: the hosts and networks of the operator's own CalDAV servers. */
  privateAddressAllowlist?: readonly string[]
  /** The largest answer read (default CALDAV_ANSWER_LIMIT_BYTES). */
  maxAnswerBytes?: number
}

/**
 * A DAV answer larger than this fails the request: a listing of hrefs and etags holds tens of
 * thousands of events within it, and resources are read in pages (calendar-multiget).
 */
export const CALDAV_ANSWER_LIMIT_BYTES = 10 * 1024 * 1024

/** What connecting needs from the person: where the server is and how to sign in. */
export interface CalDavAccount {
  serverUrl: string
  username: string
  password: string
}

/** The server refused the user name and password. */
export class CalDavCredentialsRefusedError extends Error {
  override name = 'CalDavCredentialsRefusedError'
}

/** No CalDAV calendar home was found at the URL (not a CalDAV server, or a wrong URL). */
export class CalDavDiscoveryError extends Error {
  override name = 'CalDavDiscoveryError'
}

const CALDAV_POLL_INTERVAL_MS = 5 * 60_000
/** A conditional write that keeps losing to concurrent changes gives up after this many tries. */
const WRITE_ATTEMPTS = 3
/**
 * The redirects RFC 6764 (section 5) names for a well-known URI, and 302 and 308, which servers
 * answer too; the target is asked the same PROPFIND, whichever it is, as CalDAV clients do.
 */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/** Redirects of `/.well-known/caldav` followed, at most. */
const WELL_KNOWN_REDIRECTS = 3

const DAV_NAMESPACES = 'xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:ic="http://apple.com/ns/ical/"'

function xmlEscape (value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')
}

/** A prop's text as xml-js (through tsdav) left it: a string, a number, or an element with `_text`. */
function text (value: unknown): string | null {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (typeof value === 'object' && value !== null && '_text' in value) return text((value as { _text: unknown })._text)
  return null
}

function hrefOf (value: unknown): string | null {
  if (typeof value === 'object' && value !== null && 'href' in value) {
    const href = (value as { href: unknown }).href
    return text(Array.isArray(href) ? href[0] : href)
  }
  return text(value)
}

function propsOf (response: DAVResponse): Record<string, unknown> {
  return (response.props ?? {}) as Record<string, unknown>
}

/** The collection's own time zone (`calendar-timezone` holds a VTIMEZONE): its TZID, else UTC. */
function zoneOf (vtimezone: string | null): string {
  const tzid = vtimezone === null ? null : /TZID:([^\r\n]+)/.exec(vtimezone)?.[1]?.trim() ?? null
  return tzid ?? 'UTC'
}

/**
 * The overrides (RECURRENCE-ID) each series' resource had when last read, by href: each original
 * start with the override's version. A pull that reads the resource without one of them tells the
 * backend it is gone, dated after that version (another client's clock may run ahead of ours).
 */
type KnownOverrides = Record<string, Record<string, string>>

/**
 * The cursor of a calendar: the server's sync token, or (without RFC 6578) its ctag and etags; with
 * the overrides known, since neither a sync token nor an etag says which override went.
 */
type Cursor = ({ kind: 'token', token: string } | { kind: 'etags', ctag: string | null, etags: Record<string, string> }) & { overrides: KnownOverrides }

function encodeCursor (cursor: Cursor): string {
  const overrides = Object.keys(cursor.overrides).length === 0 ? {} : { o: cursor.overrides }
  if (cursor.kind === 'token') return Object.keys(overrides).length === 0 ? `token:${cursor.token}` : `tokens:${JSON.stringify({ t: cursor.token, ...overrides })}`
  return `etags:${JSON.stringify({ c: cursor.ctag, e: cursor.etags, ...overrides })}`
}

function overridesOf (value: unknown): KnownOverrides {
  const overrides: KnownOverrides = {}
  if (typeof value !== 'object' || value === null) return overrides
  for (const [href, starts] of Object.entries(value)) {
    if (typeof starts !== 'object' || starts === null) continue
    overrides[href] = Object.fromEntries(Object.entries(starts).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
  }
  return overrides
}

function decodeCursor (value: string): Cursor {
  if (value.startsWith('token:')) return { kind: 'token', token: value.slice('token:'.length), overrides: {} }
  try {
    if (value.startsWith('tokens:')) {
      const parsed = JSON.parse(value.slice('tokens:'.length)) as { t?: unknown, o?: unknown }
      if (typeof parsed.t === 'string') return { kind: 'token', token: parsed.t, overrides: overridesOf(parsed.o) }
    }
    if (value.startsWith('etags:')) {
      const parsed = JSON.parse(value.slice('etags:'.length)) as { c?: unknown, e?: unknown, o?: unknown }
      const etags: Record<string, string> = {}
      if (typeof parsed.e === 'object' && parsed.e !== null) {
        for (const [href, etag] of Object.entries(parsed.e)) if (typeof etag === 'string') etags[href] = etag
      }
      return { kind: 'etags', ctag: typeof parsed.c === 'string' ? parsed.c : null, etags, overrides: overridesOf(parsed.o) }
    }
  } catch {}
  throw new ProviderCursorExpiredError('the stored CalDAV cursor cannot be read')
}

/** The overrides among one resource's events: their original starts and versions. */
function overrideStarts (events: ProviderEvent[]): Record<string, string> {
  return Object.fromEntries(events.flatMap((event) => event.recurringEventId === undefined || event.originalStartDate === undefined ? [] : [[event.originalStartDate, event.updated]]))
}

interface Resource {
  href: string
  etag: string | null
  ics: string
}

export class CalDavAdapter implements ProviderPort {
  readonly provider = 'caldav' as const
  readonly pollIntervalMs: number
  readonly #options: CalDavAdapterOptions
  readonly #transport: ProviderFetch

  constructor (options: CalDavAdapterOptions = {}) {
    this.#options = options
    this.#transport = options.fetch ?? providerFetch({ maxBytes: options.maxAnswerBytes ?? CALDAV_ANSWER_LIMIT_BYTES, policy: addressPolicy(options.privateAddressAllowlist) })
    this.pollIntervalMs = options.pollIntervalMs ?? CALDAV_POLL_INTERVAL_MS
  }

  authorizationUrl (): string {
    throw new Error('CalDAV connects with a user name and password, not through an authorization URL')
  }

  async exchangeCode (): Promise<GrantedCredential> {
    throw new Error('CalDAV connects with a user name and password, not with an authorization code')
  }

  /**
   * Checks an account before anything is stored: discovery (RFC 6764 `/.well-known/caldav`, then
   * the URL itself; current-user-principal; calendar-home-set) and at least one calendar. Answers
   * the credential to store, with the home found, so later calls skip discovery, and the server
   * the connection is pinned to: the one given, or where its well-known redirect led (#wellKnown).
   */
  async verifyAccount (account: CalDavAccount): Promise<ProviderCredential> {
    let server: URL
    try {
      server = new URL(account.serverUrl)
    } catch {
      throw new CalDavDiscoveryError('the server URL is not a URL')
    }
    if (server.protocol !== 'https:' && server.protocol !== 'http:') throw new CalDavDiscoveryError('the server URL must be http or https')
    const credential: ProviderCredential = { serverUrl: server.toString(), username: account.username, password: account.password }
    const context: ProviderContext = { connectionId: 'verify', userId: 'verify', credential }
    try {
      const { home, serverUrl } = await this.#discoverHome(context, server)
      const verified = { ...credential, serverUrl, homeUrl: home }
      await this.listCalendars({ ...context, credential: verified })
      return verified
    } catch (error) {
      if (error instanceof ProviderAuthorizationRevokedError) throw new CalDavCredentialsRefusedError('the CalDAV server refused the user name and password')
      if (error instanceof CalDavDiscoveryError) throw error
      throw new CalDavDiscoveryError(`no CalDAV calendars were found at the server URL (${error instanceof Error ? error.message : 'unknown failure'})`)
    }
  }

  async listCalendars (context: ProviderContext): Promise<ProviderCalendar[]> {
    // A credential without its home finds it again; should discovery end on another server now,
    // that server is not the one stored, and #onServer refuses to go there.
    const home = context.credential['homeUrl'] ?? (await this.#discoverHome(context, new URL(this.#server(context)))).home
    const responses = await this.#dav(context, home, 'PROPFIND', '1',
      `<d:propfind ${DAV_NAMESPACES}><d:prop><d:resourcetype/><d:displayname/><c:calendar-timezone/><c:supported-calendar-component-set/><ic:calendar-color/></d:prop></d:propfind>`)
    const found: ProviderCalendar[] = []
    for (const response of responses) {
      const props = propsOf(response)
      const type = props['resourcetype']
      if (typeof type !== 'object' || type === null || !('calendar' in type) || response.href === undefined) continue
      const components = JSON.stringify(props['supportedCalendarComponentSet'] ?? '')
      if (components.length > 2 && !components.includes('VEVENT')) continue
      const url = new URL(response.href, home).toString()
      // A calendar on another host is not this server's: it is never listed, so never pulled or written.
      if (new URL(url).origin !== new URL(this.#server(context)).origin) continue
      found.push({ calendarId: url, name: text(props['displayname']) ?? url, primary: false, timeZone: zoneOf(text(props['calendarTimezone'])), ...colorOf(text(props['calendarColor'])) })
    }
    found.sort((a, b) => a.calendarId.localeCompare(b.calendarId))
    // CalDAV names no default calendar: the first one takes the user's own events.
    if (found[0] !== undefined) found[0].primary = true
    return found
  }

  /**
   * Lists the calendar's resources (hrefs and etags only), then reads them in pages of `pageSize`
   * (calendar-multiget), so no answer holds the whole calendar: each stays within the answer limit.
   */
  async importCalendar (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink): Promise<ImportResult> {
    // Read before the listing, so a change made while the listing runs is pulled afterwards.
    const state = request.window ? null : await this.#collectionState(context, calendar.calendarId)
    const range = request.window
      ? `<c:time-range start="${ICAL.Time.fromJSDate(request.window.from, true).toICALString()}" end="${ICAL.Time.fromJSDate(request.window.to, true).toICALString()}"/>`
      : ''
    const listed = await this.#listing(context, calendar.calendarId,
      `<c:calendar-query ${DAV_NAMESPACES}><d:prop><d:getetag/></d:prop><c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">${range}</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>`)
    const size = this.#options.pageSize ?? 250
    const offset = Number(request.pageToken ?? 0) || 0
    const overrides: KnownOverrides = {}
    const etags: Record<string, string> = Object.fromEntries(listed.map((entry) => [entry.href, entry.etag ?? '']))
    // A resumed import delivered the pages before its offset already, but the cursor it ends with
    // must know their overrides too (a pull tells an override removed only against what it knew):
    // they are read again, not delivered.
    for (let start = 0; start < Math.min(offset, listed.length); start += size) {
      const resources = await this.#multiget(context, calendar.calendarId, listed.slice(start, Math.min(start + size, offset)).map((entry) => entry.href))
      for (const resource of resources) {
        const starts = overrideStarts(eventsOfResource(resource.href, resource.ics, resource.etag, calendar.timeZone))
        if (Object.keys(starts).length > 0) overrides[resource.href] = starts
      }
    }
    if (listed.length <= offset) await sink({ events: [], nextPageToken: null })
    for (let start = offset; start < listed.length; start += size) {
      const resources = await this.#multiget(context, calendar.calendarId, listed.slice(start, start + size).map((entry) => entry.href))
      const events: ProviderEvent[] = []
      for (const resource of resources) {
        const found = eventsOfResource(resource.href, resource.ics, resource.etag, calendar.timeZone)
        const starts = overrideStarts(found)
        if (Object.keys(starts).length > 0) overrides[resource.href] = starts
        // The version read is the one delivered: a change since the listing is that version's.
        etags[resource.href] = resource.etag ?? ''
        events.push(...found)
      }
      await sink({ events, nextPageToken: start + size < listed.length ? String(start + size) : null })
    }
    if (state === null) return { cursor: null }
    if (state.syncToken !== null) return { cursor: encodeCursor({ kind: 'token', token: state.syncToken, overrides }) }
    return { cursor: encodeCursor({ kind: 'etags', ctag: state.ctag, etags, overrides }) }
  }

  async pullChanges (context: ProviderContext, calendar: ProviderCalendar, cursor: string, sink: ProviderEventSink): Promise<PullResult> {
    const previous = decodeCursor(cursor)
    const now = this.#options.now?.() ?? new Date()
    if (previous.kind === 'token') {
      const responses = await this.#dav(context, calendar.calendarId, 'REPORT', '1',
        `<d:sync-collection ${DAV_NAMESPACES}><d:sync-token>${xmlEscape(previous.token)}</d:sync-token><d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>`,
        { syncCollection: true })
      const collection = new URL(calendar.calendarId).pathname
      const changed: string[] = []
      const removed: string[] = []
      for (const response of responses) {
        if (response.href === undefined) continue
        const href = new URL(response.href, calendar.calendarId).pathname
        if (href === collection) continue
        if (response.status === 404) removed.push(href)
        else changed.push(href)
      }
      const token = text((responses[0]?.raw as { multistatus?: { syncToken?: unknown } } | undefined)?.multistatus?.syncToken)
      if (token === null) throw new ProviderUnavailableError('the CalDAV server answered a sync-collection report without a sync token', null)
      const overrides = await this.#deliver(context, calendar, changed, removed, previous.overrides, now, sink)
      return { cursor: encodeCursor({ kind: 'token', token, overrides }) }
    }
    // Without RFC 6578: an unchanged ctag says nothing changed; else the etags tell what did.
    const state = await this.#collectionState(context, calendar.calendarId)
    if (state.ctag !== null && state.ctag === previous.ctag) {
      await sink({ events: [], nextPageToken: null })
      return { cursor }
    }
    const listing = await this.#dav(context, calendar.calendarId, 'PROPFIND', '1', `<d:propfind ${DAV_NAMESPACES}><d:prop><d:getetag/><d:resourcetype/></d:prop></d:propfind>`)
    const collection = new URL(calendar.calendarId).pathname
    const etags: Record<string, string> = {}
    for (const response of listing) {
      if (response.href === undefined) continue
      const href = new URL(response.href, calendar.calendarId).pathname
      if (href === collection) continue
      etags[href] = text(propsOf(response)['getetag']) ?? ''
    }
    const changed = Object.keys(etags).filter((href) => previous.etags[href] !== etags[href])
    const removed = Object.keys(previous.etags).filter((href) => etags[href] === undefined)
    const overrides = await this.#deliver(context, calendar, changed, removed, previous.overrides, now, sink)
    return { cursor: encodeCursor({ kind: 'etags', ctag: state.ctag, etags, overrides }) }
  }

  /**
   * A write with the resource's etag as `If-Match` (or `If-None-Match: *` for a new resource). A
   * 412 means someone changed it meanwhile: it is read again and the newer version wins.
   */
  async writeEvent (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite): Promise<WriteResult> {
    const { subject } = write
    const occurrence = subject.providerEventId?.includes('#') === true
      ? subject.providerEventId.slice(subject.providerEventId.indexOf('#') + 1)
      : (subject.seriesProviderEventId !== undefined ? subject.originalStartDate ?? null : null)
    const resourceId = subject.providerEventId !== undefined
      ? resourceOf(subject.providerEventId)
      : subject.seriesProviderEventId !== undefined ? resourceOf(subject.seriesProviderEventId) : null
    const isNew = resourceId === null
    const href = resourceId ?? new URL(resourceNameFor(context.connectionId, write.eventId), calendar.calendarId.endsWith('/') ? calendar.calendarId : `${calendar.calendarId}/`).pathname
    const url = new URL(href, calendar.calendarId).toString()
    // An id that is a URL of its own, or leaves the calendar's collection, names no resource of this calendar.
    if (!url.startsWith(calendar.calendarId.endsWith('/') ? calendar.calendarId : `${calendar.calendarId}/`)) {
      throw new ProviderRejectedError('the event\'s provider id names no resource of its calendar', 400)
    }
    const removal = write.operation === 'delete' || subject.cancelled === true

    for (let attempt = 1; ; attempt++) {
      const current = await this.#get(context, url)
      const parsed = current === null ? null : parseResource(current.ics)
      const master = parsed === null ? null : masterOf(parsed)
      const target = parsed === null || master === null
        ? null
        : occurrence === null ? master : overrideOf(parsed, occurrence, calendar.timeZone)
      const mapped = (resource: Resource | null) => resource === null ? [] : eventsOfResource(href, resource.ics, resource.etag, calendar.timeZone)
      const wanted = occurrence === null ? href : `${href}#${occurrence}`
      const theirs = target === null || parsed === null ? null : contentOf(target, parsed, calendar.timeZone)
      // A change made there since the version this one was made on is merged with it, part by part.
      // The resource as our own last write left it (the same etag) holds no change by another client,
      // whatever its LAST-MODIFIED says (a merge of ours is stamped after both its parts).
      const ownCopy = write.ownVersion !== undefined && current?.etag === write.ownVersion
      const plan = removal || target === null ? null : planWrite(subject, { ...(theirs === null ? {} : { content: theirs }), updated: versionOf(target) }, ownCopy)
      if (target !== null && (plan === null ? !ownCopy && providerVersionWins(versionOf(target), subject.lastUpdated) : plan.kind === 'theirs')) {
        return { outcome: 'providerNewer', event: mapped(current).find((event) => event.providerEventId === wanted) ?? null }
      }
      const content = plan?.kind === 'write' ? plan.content : subject.content
      // A merge is a version after both it was made of, so the backend takes the parts the server gave it.
      const mergeStamp = target === null ? subject.lastUpdated : new Date(Math.max(Date.parse(subject.lastUpdated), Date.parse(versionOf(target))) + 1000).toISOString()
      let merged = plan?.kind === 'write' && plan.merged
      const stamp = merged ? mergeStamp : subject.lastUpdated
      try {
        if (current === null || parsed === null || master === null) {
          if (removal) return { outcome: 'nothingToDo', event: null }
          if (!isNew) throw new ProviderNotFoundError('the CalDAV server has no resource for the linked event')
          if (content === undefined) throw new Error('a provider write of a live event needs its content')
          const created = newResource(href.split('/').at(-1)?.replace(/\.ics$/, '') ?? write.eventId, write.eventId, content, subject.lastUpdated)
          const etag = await this.#put(context, url, created.toString(), null)
          const resource: Resource = { href, etag, ics: created.toString() }
          return { outcome: isNew ? 'inserted' : 'written', event: mapped(resource).find((event) => event.providerEventId === href) ?? null }
        }
        if (occurrence === null) {
          if (removal) {
            await this.#delete(context, url, current.etag)
            return { outcome: 'written', event: null }
          }
          if (content === undefined) throw new Error('a provider write of a live event needs its content')
          const previous = contentOf(master, parsed, calendar.timeZone)
          const excluded = exclusionsOf(master, parsed, calendar.timeZone)
          applyContent(master, content, stamp)
          if (previous !== null) {
            moveOverrides(parsed, master, previous, content, calendar.timeZone)
            if (moveExclusions(parsed, master, excluded, previous, content, calendar.timeZone) > 0 && !merged) {
              merged = true
              stampVersion(master, mergeStamp)
            }
          }
        } else if (removal) {
          // A cancelled occurrence leaves its series as an EXDATE, and its override goes.
          if (target !== null) parsed.removeSubcomponent(target)
          master.addProperty(occurrenceProperty('exdate', master, occurrence))
        } else {
          if (content === undefined) throw new Error('a provider write of a live event needs its content')
          let override = target
          if (override === null) {
            override = new ICAL.Component('vevent')
            override.updatePropertyWithValue('uid', master.getFirstPropertyValue('uid') ?? href)
            override.addProperty(occurrenceProperty('recurrence-id', master, occurrence))
            parsed.addSubcomponent(override)
            removeExclusion(parsed, master, occurrence, calendar.timeZone)
          }
          applyContent(override, { ...content, recurrence: undefined }, stamp)
        }
        addTimeZones(parsed)
        const ics = parsed.toString()
        const etag = await this.#put(context, url, ics, current.etag ?? '*')
        return { outcome: merged ? 'merged' : 'written', event: removal && occurrence === null ? null : mapped({ href, etag, ics }).find((event) => event.providerEventId === wanted) ?? null }
      } catch (error) {
        if (error instanceof ProviderVersionConflictError && attempt < WRITE_ATTEMPTS) continue
        throw error
      }
    }
  }

  async watch (): Promise<Watch> {
    throw new Error('CalDAV has no change notifications; its calendars are pulled on a timer')
  }

  async unwatch (): Promise<void> {}

  /**
   * Hands the backend the changed resources and the removed ones, and answers the overrides known
   * afterwards. An override the resource had when last read and no longer has (another client
   * removed it, the occurrence follows its series again) goes to the backend as a removed item
   * under its own id, so the backend drops its edit of that occurrence.
   */
  async #deliver (context: ProviderContext, calendar: ProviderCalendar, changed: string[], removed: string[], known: KnownOverrides, now: Date, sink: ProviderEventSink): Promise<KnownOverrides> {
    const size = this.#options.pageSize ?? 250
    const overrides: KnownOverrides = { ...known }
    for (const href of removed) delete overrides[href]
    const removals = removed.map((href) => removedResource(href, now))
    if (changed.length === 0) {
      await sink({ events: removals, nextPageToken: null })
      return overrides
    }
    for (let start = 0; start < changed.length; start += size) {
      const resources = await this.#multiget(context, calendar.calendarId, changed.slice(start, start + size))
      const events: ProviderEvent[] = []
      for (const resource of resources) {
        const found = eventsOfResource(resource.href, resource.ics, resource.etag, calendar.timeZone)
        const starts = overrideStarts(found)
        for (const [gone, version] of Object.entries(overrides[resource.href] ?? {}).filter(([original]) => starts[original] === undefined)) {
          const after = Math.max(now.getTime(), (Date.parse(version) || 0) + 1)
          events.push(removedResource(overrideId(resource.href, gone), new Date(after)))
        }
        if (Object.keys(starts).length > 0) overrides[resource.href] = starts
        else delete overrides[resource.href]
        events.push(...found)
      }
      const last = start + size >= changed.length
      await sink({ events: start === 0 ? [...removals, ...events] : events, nextPageToken: last ? null : String(start + size) })
    }
    return overrides
  }

  async #collectionState (context: ProviderContext, calendarUrl: string): Promise<{ syncToken: string | null, ctag: string | null }> {
    const [response] = await this.#dav(context, calendarUrl, 'PROPFIND', '0', `<d:propfind ${DAV_NAMESPACES}><d:prop><d:sync-token/><cs:getctag/></d:prop></d:propfind>`)
    const props = response === undefined ? {} : propsOf(response)
    return { syncToken: text(props['syncToken']), ctag: text(props['getctag']) }
  }

  /** The resources named, with their data (calendar-multiget, RFC 4791 section 7.9). */
  async #multiget (context: ProviderContext, calendarUrl: string, hrefs: string[]): Promise<Resource[]> {
    const named = hrefs.map((href) => `<d:href>${xmlEscape(href)}</d:href>`).join('')
    return await this.#query(context, calendarUrl, `<c:calendar-multiget ${DAV_NAMESPACES}><d:prop><d:getetag/><c:calendar-data/></d:prop>${named}</c:calendar-multiget>`)
  }

  /** The collection's resources a report names, hrefs and etags only. */
  async #listing (context: ProviderContext, calendarUrl: string, body: string): Promise<Array<{ href: string, etag: string | null }>> {
    const collection = new URL(calendarUrl).pathname
    return (await this.#dav(context, calendarUrl, 'REPORT', '1', body))
      .filter((response) => response.href !== undefined && response.status !== 404)
      .map((response) => ({ href: new URL(response.href as string, calendarUrl).pathname, etag: text(propsOf(response)['getetag']) }))
      .filter((entry) => entry.href !== collection)
  }

  async #query (context: ProviderContext, calendarUrl: string, body: string): Promise<Resource[]> {
    const responses = await this.#dav(context, calendarUrl, 'REPORT', '1', body)
    const found: Resource[] = []
    for (const response of responses) {
      const props = propsOf(response)
      const ics = text(props['calendarData'])
      if (response.href === undefined || ics === null || response.status === 404) continue
      found.push({ href: new URL(response.href, calendarUrl).pathname, etag: text(props['getetag']), ics })
    }
    return found
  }

  /** The calendar home, and the server the connection is pinned to: the one given, or where its well-known URI led (#wellKnown). */
  async #discoverHome (context: ProviderContext, server: URL): Promise<{ home: string, serverUrl: string }> {
    const principalBody = `<d:propfind ${DAV_NAMESPACES}><d:prop><d:current-user-principal/></d:prop></d:propfind>`
    let principal: string | null = null
    let pinned = context
    const starts = [
      async () => await this.#wellKnown(context, server, principalBody),
      async () => ({ context, url: server.toString(), responses: await this.#dav(context, server.toString(), 'PROPFIND', '0', principalBody) })
    ]
    for (const start of starts) {
      try {
        const found = await start()
        const [response] = found.responses
        const href = response === undefined ? null : hrefOf(propsOf(response)['currentUserPrincipal'])
        if (href !== null) {
          principal = new URL(href, found.url).toString()
          pinned = found.context
          break
        }
      } catch (error) {
        if (error instanceof ProviderAuthorizationRevokedError) throw error
      }
    }
    if (principal === null) throw new CalDavDiscoveryError('the server names no current-user-principal')
    const [response] = await this.#dav(pinned, principal, 'PROPFIND', '0', `<d:propfind ${DAV_NAMESPACES}><d:prop><c:calendar-home-set/></d:prop></d:propfind>`)
    const home = response === undefined ? null : hrefOf(propsOf(response)['calendarHomeSet'])
    if (home === null) throw new CalDavDiscoveryError('the principal names no calendar-home-set')
    return { home: new URL(home, principal).toString(), serverUrl: this.#server(pinned) }
  }

  /**
   * Asks `/.well-known/caldav` of the server given, whose answer is often a redirect to the context
   * path, possibly on another host (RFC 6764, section 5). At most WELL_KNOWN_REDIRECTS redirects
   * are followed, each only to https or within the origin of the URL that redirected, and each URL
   * is reached as every address a user gives is (checkUrl and the guarded dispatcher of the
   * transport). When the chain ends on another origin, that origin becomes the connection's server:
   * the context answered names it (the credential's serverUrl), so #onServer pins every later
   * request there. A refused redirect fails this step only: discovery goes on at the URL given.
   *
   * The password goes only to the origin given and to the origin the chain ends on. A hop on
   * another origin is asked without it, so a host in the middle of the chain never gets it, and
   * the last one gets it only when asked again, as the connection's server. The first request, to
   * the origin given, carries it as before: that origin is the one the person trusted with it and
   * gets it next anyway (the URL given is asked when the well-known URI names no principal), and
   * asking without it first would cost every connect a round trip, most servers answering 401.
   */
  async #wellKnown (context: ProviderContext, server: URL, body: string): Promise<{ context: ProviderContext, url: string, responses: DAVResponse[] }> {
    let url = new URL('/.well-known/caldav', server)
    for (let redirects = 0; ; redirects++) {
      const given = url.origin === server.origin
      const response = await this.#send(context, url.toString(), 'PROPFIND', '0', body, { credentials: given, pinned: false })
      if (!REDIRECT_STATUSES.has(response.status)) {
        if (given) return { context, url: url.toString(), responses: await this.#answer(response, 'PROPFIND') }
        await response.arrayBuffer()
        const moved = { ...context, credential: { ...context.credential, serverUrl: url.toString() } }
        return { context: moved, url: url.toString(), responses: await this.#dav(moved, url.toString(), 'PROPFIND', '0', body) }
      }
      await response.arrayBuffer()
      const location = response.headers.get('location')
      if (location === null) throw new CalDavDiscoveryError(`the well-known URI answered ${response.status} without a Location`)
      if (redirects === WELL_KNOWN_REDIRECTS) throw new AddressRefusedError(`the well-known URI redirected more than ${WELL_KNOWN_REDIRECTS} times`)
      const next = new URL(location, url)
      if (next.protocol !== 'https:' && next.origin !== url.origin) {
        throw new AddressRefusedError(`the well-known URI redirected to ${next.origin}, neither https nor the origin of the URL that redirected`)
      }
      url = next
    }
  }

  #server (context: ProviderContext): string {
    const server = context.credential['serverUrl']
    if (server === undefined) throw new ProviderAuthorizationRevokedError('the stored CalDAV credential has no server URL')
    return server
  }

  #headers (context: ProviderContext): Record<string, string> {
    const { username, password } = context.credential
    if (username === undefined || password === undefined) throw new ProviderAuthorizationRevokedError('the stored CalDAV credential has no user name or password')
    return { Authorization: `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}` }
  }

  /**
   * One WebDAV request, sent from this thread: with the password unless `credentials` is false,
   * within the origin the connection is pinned to unless `pinned` is false (#wellKnown checks its
   * hops itself), within the deadline, and read within the answer limit by the transport.
   */
  async #send (context: ProviderContext, url: string, method: 'PROPFIND' | 'REPORT', depth: '0' | '1', body: string,
    access: { credentials: boolean, pinned: boolean } = { credentials: true, pinned: true }): Promise<Response> {
    try {
      const headers = { ...(access.credentials ? this.#headers(context) : {}), Depth: depth, 'Content-Type': 'application/xml; charset=utf-8' }
      if (access.pinned) this.#onServer(context, url)
      return await this.#transport(url, { method, headers, body, signal: AbortSignal.timeout(this.#options.timeoutMs ?? 30_000) })
    } catch (error) {
      if (error instanceof ProviderAuthorizationRevokedError) throw error
      throw new ProviderUnavailableError(`the CalDAV server did not answer ${method} (${error instanceof Error ? error.name : 'failure'})`, null)
    }
  }

  /** The responses of a multistatus answer, parsed off the event loop when large (dav-answers.ts); a failure's status as its error. */
  async #answer (response: Response, method: 'PROPFIND' | 'REPORT', options: { syncCollection?: boolean } = {}): Promise<DAVResponse[]> {
    let responses: DAVResponse[]
    try {
      responses = await davResponsesOf(response)
    } catch (error) {
      throw new ProviderUnavailableError(`the CalDAV server did not answer ${method} (${error instanceof Error ? error.name : 'failure'})`, null)
    }
    const first = responses[0]
    // A failed request comes back as a single answer without a multistatus.
    if (first !== undefined && responses.length === 1 && first.props === undefined && !first.ok) {
      if (options.syncCollection === true && (first.status === 403 || first.status === 409 || first.status === 410)) {
        throw new ProviderCursorExpiredError(`the CalDAV server no longer accepts the sync token (${first.status})`)
      }
      throw this.#failure(first.status, method, response.headers.get('retry-after'))
    }
    return responses
  }

  async #dav (context: ProviderContext, url: string, method: 'PROPFIND' | 'REPORT', depth: '0' | '1', body: string, options: { syncCollection?: boolean } = {}): Promise<DAVResponse[]> {
    return await this.#answer(await this.#send(context, url, method, depth, body), method, options)
  }

  /** `retryAfter`: the answer's Retry-After header, which a 429 or 503 may carry (RFC 9110, 10.2.3). */
  #failure (status: number, what: string, retryAfter: string | null): Error {
    const kind: ProviderFailureKind = status === 401
      ? 'revoked'
      : status === 404 || status === 410
        ? 'notFound'
        : status === 412 ? 'conflict' : status === 429 || status >= 500 ? 'unavailable' : 'rejected'
    return providerError({ kind, who: 'the CalDAV server', detail: `${what}: ${status}`, status, retryAfterMs: retryAfterMs(retryAfter, new Date()) })
  }

  /**
   * Every request of a connection stays on the origin of its server (the one the person gave, or
   * where its well-known URI led: #wellKnown): an href an answer names on another host (or a
   * stored id that does) is never sent the password.
   */
  #onServer (context: ProviderContext, url: string): void {
    if (new URL(url).origin !== new URL(this.#server(context)).origin) {
      throw new AddressRefusedError(`the CalDAV server named a URL on another origin (${new URL(url).origin})`)
    }
  }

  async #fetch (context: ProviderContext, url: string, init: { method: string, headers?: Record<string, string>, body?: string }): Promise<Response> {
    this.#onServer(context, url)
    try {
      return await this.#transport(url, { ...init, headers: { ...this.#headers(context), ...init.headers }, signal: AbortSignal.timeout(this.#options.timeoutMs ?? 30_000) })
    } catch (error) {
      if (error instanceof ProviderAuthorizationRevokedError) throw error
      throw new ProviderUnavailableError(`the CalDAV server did not answer ${init.method} (${error instanceof Error ? error.name : 'failure'})`, null)
    }
  }

  async #get (context: ProviderContext, url: string): Promise<Resource | null> {
    const response = await this.#fetch(context, url, { method: 'GET' })
    const body = await response.text()
    if (response.status === 404 || response.status === 410) return null
    if (!response.ok) throw this.#failure(response.status, 'GET', response.headers.get('retry-after'))
    return { href: new URL(url).pathname, etag: response.headers.get('etag'), ics: body }
  }

  /** PUT with `If-Match: <etag>`, or `If-None-Match: *` when `etag` is null; answers the new etag. */
  async #put (context: ProviderContext, url: string, ics: string, etag: string | null): Promise<string | null> {
    const response = await this.#fetch(context, url, {
      method: 'PUT',
      headers: { 'Content-Type': 'text/calendar; charset=utf-8', ...(etag === null ? { 'If-None-Match': '*' } : { 'If-Match': etag }) },
      body: ics
    })
    await response.arrayBuffer()
    if (!response.ok) throw this.#failure(response.status, 'PUT', response.headers.get('retry-after'))
    return response.headers.get('etag')
  }

  async #delete (context: ProviderContext, url: string, etag: string | null): Promise<void> {
    const response = await this.#fetch(context, url, { method: 'DELETE', headers: etag === null ? {} : { 'If-Match': etag } })
    await response.arrayBuffer()
    if (response.status === 404 || response.status === 410) return
    if (!response.ok) throw this.#failure(response.status, 'DELETE', response.headers.get('retry-after'))
  }
}
