// The CalDAV adapter of the provider port (RFC 4791, RFC 6578): a server URL, a user name and an
// app password instead of OAuth. WebDAV requests go through CalDavClient (dav-client.ts), whose
// multistatus answers tsdav's davRequest parses off the event loop (dav-answers.ts); iCalendar goes
// through ical.js (sync/lib/providers/caldav-mapping.ts); the cursor between pulls is
// sync/lib/providers/caldav-cursor.ts. CalDAV has no push, so the service pulls each calendar on a
// timer (pollIntervalMs).
import ICAL from 'ical.js'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import type { ProviderCredential } from '../../lib/credentials.js'
import { planWrite } from '../../lib/merge.js'
import { providerVersionWins } from '../../lib/provider-sync.js'
import { decodeCursor, encodeCursor, overrideStarts, type KnownOverrides } from '../../lib/providers/caldav-cursor.js'
import {
  addTimeZones, applyContent, contentOf, eventsOfResource, newResource, overrideId, parseResource, removedResource, resourceNameFor, resourceOf, stampVersion, versionOf
} from '../../lib/providers/caldav-mapping.js'
import { exclusionsOf, masterOf, moveExclusions, moveOverrides, occurrenceProperty, overrideOf, removeExclusion } from '../../lib/providers/caldav-series.js'
import {
  colorOf, ProviderAuthorizationRevokedError, ProviderNotFoundError, ProviderRejectedError, ProviderUnavailableError, ProviderVersionConflictError,
  type GrantedCredential, type ImportRequest, type ImportResult, type ProviderCalendar, type ProviderContext, type ProviderEventSink,
  type ProviderPort, type ProviderWrite, type PullResult, type Watch, type WriteResult
} from '../../lib/providers/port.js'
import { addressPolicy } from '../address-guard.js'
import { providerFetch, type ProviderFetch } from '../buffered-fetch.js'
import { takePagesReadingAhead } from '../read-ahead.js'
import { text } from './dav-answers.js'
import { CALDAV_ANSWER_LIMIT_BYTES, CalDavClient, CalDavDiscoveryError, type CollectionState, DAV_NAMESPACES, propsOf, xmlEscape, type Resource } from './dav-client.js'

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

const CALDAV_POLL_INTERVAL_MS = 5 * 60_000
/** How long a collection state asked for at the end of a window pass may serve the full pass that follows it. */
const STATE_AHEAD_MS = 60_000
/** A conditional write that keeps losing to concurrent changes gives up after this many tries. */
const WRITE_ATTEMPTS = 3
/**
 * Pages (of pageSize resources) read and parsed ahead of the one the backend applies: the sink
 * hands a thousand events over at once, and the next ones are parsed meanwhile.
 */
const PAGES_AHEAD = 4
/** The collection's own time zone (`calendar-timezone` holds a VTIMEZONE): its TZID, else UTC. */
function zoneOf (vtimezone: string | null): string {
  const tzid = vtimezone === null ? null : /TZID:([^\r\n]+)/.exec(vtimezone)?.[1]?.trim() ?? null
  return tzid ?? 'UTC'
}

export class CalDavAdapter implements ProviderPort {
  readonly provider = 'caldav' as const
  readonly pollIntervalMs: number
  readonly #options: CalDavAdapterOptions
  readonly #caldav: CalDavClient
  /** Collection states asked for ahead, by connection and calendar, each taken once (#stateBeforeRead). */
  readonly #statesAhead = new Map<string, { askedAt: number, state: Promise<CollectionState> }>()

  constructor (options: CalDavAdapterOptions = {}) {
    this.#options = options
    this.#caldav = new CalDavClient(options.fetch ?? providerFetch({ provider: 'caldav', maxBytes: options.maxAnswerBytes ?? CALDAV_ANSWER_LIMIT_BYTES, policy: addressPolicy(options.privateAddressAllowlist) }), options.timeoutMs)
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
   * the connection is pinned to: the one given, or where its well-known redirect led (CalDavClient, dav-client.ts).
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
      const { home, serverUrl } = await this.#caldav.discoverHome(context, server)
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
    // that server is not the one stored, and CalDavClient refuses to go there.
    const home = context.credential['homeUrl'] ?? (await this.#caldav.discoverHome(context, new URL(this.#caldav.server(context)))).home
    const responses = await this.#caldav.request(context, home, 'PROPFIND', '1',
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
      if (new URL(url).origin !== new URL(this.#caldav.server(context)).origin) continue
      found.push({ calendarId: url, name: text(props['displayname']) ?? url, primary: false, timeZone: zoneOf(text(props['calendarTimezone'])), ...colorOf(text(props['calendarColor'])) })
    }
    found.sort((a, b) => a.calendarId.localeCompare(b.calendarId))
    // CalDAV names no default calendar: the first one takes the user's own events.
    if (found[0] !== undefined) found[0].primary = true
    return found
  }

  /**
   * Reads the calendar (or the window's part of it) with one calendar-query that brings every
   * resource's data, as the server answers it in one go; when that answer is larger than the
   * answer limit (or leaves some resource's data out), lists the resources (hrefs and etags only) and reads them in pages of `pageSize`
   * (calendar-multiget), the next page asked for while one is applied. Either way the backend gets
   * pages of `pageSize` resources, and a page token is the offset of the next page.
   */
  async importCalendar (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink): Promise<ImportResult> {
    // Read before the calendar is, so a change made while it is read is pulled afterwards.
    const state = request.window ? null : await this.#stateBeforeRead(context, calendar)
    const range = request.window
      ? `<c:time-range start="${ICAL.Time.fromJSDate(request.window.from, true).toICALString()}" end="${ICAL.Time.fromJSDate(request.window.to, true).toICALString()}"/>`
      : ''
    const query = (props: string) =>
      `<c:calendar-query ${DAV_NAMESPACES}><d:prop>${props}</d:prop><c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">${range}</c:comp-filter></c:comp-filter></c:filter></c:calendar-query>`
    const size = this.#options.pageSize ?? 250
    const offset = Number(request.pageToken ?? 0) || 0
    // The first pages' events are mapped where the answer is parsed (dav-answers.ts), while it is
    // still being parsed; the rest page by page here, ahead of the backend.
    const eventsOf = (resource: Resource) => resource.events ?? eventsOfResource(resource.href, resource.ics, resource.etag, calendar.timeZone)
    const whole = await this.#caldav.wholeQuery(context, calendar.calendarId, query('<d:getetag/><c:calendar-data/>'),
      { calendarUrl: calendar.calendarId, timeZone: calendar.timeZone, first: offset + size * (PAGES_AHEAD + 1) })
    const listed = whole ?? await this.#caldav.listing(context, calendar.calendarId, query('<d:getetag/>'))
    // The full pass follows: the server works out the collection's state (for a first sync token,
    // seconds on a large calendar) while the weeks around today are applied here.
    if (request.window) this.#askStateAhead(context, calendar)
    const read = whole === null
      ? async (start: number, end: number) => ({ start, resources: await this.#caldav.multiget(context, calendar.calendarId, listed.slice(start, end).map((entry) => entry.href)) })
      : async (start: number, end: number) => ({ start, resources: whole.slice(start, end) })
    const overrides: KnownOverrides = {}
    const etags: Record<string, string> = Object.fromEntries(listed.map((entry) => [entry.href, entry.etag ?? '']))
    // A resumed import delivered the pages before its offset already, but the cursor it ends with
    // must know their overrides too (a pull tells an override removed only against what it knew):
    // they are read again, not delivered.
    for (let start = 0; start < Math.min(offset, listed.length); start += size) {
      for (const resource of (await read(start, Math.min(start + size, offset))).resources) {
        const starts = overrideStarts(eventsOf(resource))
        if (Object.keys(starts).length > 0) overrides[resource.href] = starts
      }
    }
    if (listed.length <= offset) {
      await sink({ events: [], nextPageToken: null })
    } else {
      // A page is read and its iCalendar parsed ahead, while the backend applies the pages before it.
      const page = async (start: number) => {
        const { resources } = await read(start, start + size)
        // A page whose iCalendar is still to parse waits a turn, so a batch just handed over is on
        // its way to the backend before this page takes the event loop.
        if (resources.some((resource) => resource.events === undefined)) await new Promise((resolve) => setImmediate(resolve))
        const events: ProviderEvent[] = []
        for (const resource of resources) {
          const found = eventsOf(resource)
          const starts = overrideStarts(found)
          if (Object.keys(starts).length > 0) overrides[resource.href] = starts
          // The version read is the one delivered: a change since the listing is that version's.
          etags[resource.href] = resource.etag ?? ''
          events.push(...found)
        }
        return { start, events }
      }
      await takePagesReadingAhead(await page(offset), (last) => last.start + size < listed.length ? page(last.start + size) : null, async ({ start, events }) => {
        await sink({ events, nextPageToken: start + size < listed.length ? String(start + size) : null })
      }, PAGES_AHEAD)
    }
    if (state === null) return { cursor: null }
    if (state.syncToken !== null) return { cursor: encodeCursor({ kind: 'token', token: state.syncToken, overrides }) }
    return { cursor: encodeCursor({ kind: 'etags', ctag: state.ctag, etags, overrides }) }
  }

  async pullChanges (context: ProviderContext, calendar: ProviderCalendar, cursor: string, sink: ProviderEventSink): Promise<PullResult> {
    const previous = decodeCursor(cursor)
    const now = this.#options.now?.() ?? new Date()
    if (previous.kind === 'token') {
      const responses = await this.#caldav.request(context, calendar.calendarId, 'REPORT', '1',
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
    const state = await this.#caldav.collectionState(context, calendar.calendarId)
    if (state.ctag !== null && state.ctag === previous.ctag) {
      await sink({ events: [], nextPageToken: null })
      return { cursor }
    }
    const listing = await this.#caldav.request(context, calendar.calendarId, 'PROPFIND', '1', `<d:propfind ${DAV_NAMESPACES}><d:prop><d:getetag/><d:resourcetype/></d:prop></d:propfind>`)
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
      const current = await this.#caldav.get(context, url)
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
      // What this write replaces is older than it: our own last version at the time it was read
      // back as, anyone else's at its LAST-MODIFIED. A merge is a version after both it was made
      // of, so the backend takes the parts the server gave it; any other write is the backend's
      // version, unless the one it replaces is stamped later (another client's clock ahead of
      // ours, or a merge of ours). The stamps keep their milliseconds: LAST-MODIFIED keeps whole
      // seconds, and our copy read back is dated by the write's record (sync/lib/own-writes.ts),
      // so a change the person makes in the next second is still the newer one.
      const replacedAt = target === null ? -Infinity : Math.max(Date.parse(versionOf(target)), ownCopy && write.ownUpdated !== undefined ? Date.parse(write.ownUpdated) : -Infinity)
      const carried = Date.parse(subject.lastUpdated)
      const mergeStamp = new Date(Math.max(carried, replacedAt) + 1).toISOString()
      let merged = plan?.kind === 'write' && plan.merged
      const stamp = merged ? mergeStamp : new Date(Math.max(carried, replacedAt + 1)).toISOString()
      try {
        if (current === null || parsed === null || master === null) {
          if (removal) return { outcome: 'nothingToDo', event: null }
          if (!isNew) throw new ProviderNotFoundError('the CalDAV server has no resource for the linked event')
          if (content === undefined) throw new Error('a provider write of a live event needs its content')
          const created = newResource(href.split('/').at(-1)?.replace(/\.ics$/, '') ?? write.eventId, write.eventId, content, subject.lastUpdated)
          const etag = await this.#caldav.put(context, url, created.toString(), null)
          const resource: Resource = { href, etag, ics: created.toString() }
          const inserted = mapped(resource).find((event) => event.providerEventId === href) ?? null
          return { outcome: isNew ? 'inserted' : 'written', event: inserted === null ? null : { ...inserted, updated: subject.lastUpdated } }
        }
        if (occurrence === null) {
          if (removal) {
            await this.#caldav.delete(context, url, current.etag)
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
        const etag = await this.#caldav.put(context, url, ics, current.etag ?? '*')
        const written = removal && occurrence === null ? null : mapped({ href, etag, ics }).find((event) => event.providerEventId === wanted) ?? null
        return { outcome: merged ? 'merged' : 'written', event: written === null || removal ? written : { ...written, updated: merged ? mergeStamp : stamp }, ...(current.etag === null ? {} : { replaced: current.etag }) }
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

  #askStateAhead (context: ProviderContext, calendar: ProviderCalendar): void {
    const now = Date.now()
    for (const [key, ahead] of this.#statesAhead) if (now - ahead.askedAt > STATE_AHEAD_MS) this.#statesAhead.delete(key)
    const state = this.#caldav.collectionState(context, calendar.calendarId)
    // Its failure is the full pass's to meet, by asking again.
    state.catch(() => {})
    this.#statesAhead.set(`${context.connectionId} ${calendar.calendarId}`, { askedAt: now, state })
  }

  /**
   * The collection's state for a full pass: the one asked for at the end of its window pass when
   * there is one (read before this pass reads anything, as it must be), else read now.
   */
  async #stateBeforeRead (context: ProviderContext, calendar: ProviderCalendar): Promise<CollectionState> {
    const key = `${context.connectionId} ${calendar.calendarId}`
    const ahead = this.#statesAhead.get(key)
    this.#statesAhead.delete(key)
    const readNow = async () => await this.#caldav.collectionState(context, calendar.calendarId)
    if (ahead === undefined || Date.now() - ahead.askedAt > STATE_AHEAD_MS) return await readNow()
    return await ahead.state.catch(readNow)
  }

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
      const resources = await this.#caldav.multiget(context, calendar.calendarId, changed.slice(start, start + size))
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
}
