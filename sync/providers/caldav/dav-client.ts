// How the CalDAV adapter talks to a server: WebDAV requests (PROPFIND, REPORT) and resource reads
// and conditional writes, each with the connection's password, pinned to the connection's server,
// within a deadline and read within the answer limit; discovery of the calendar home (RFC 6764,
// RFC 4791 section 6.2). Multistatus answers are parsed off the event loop (dav-answers.ts).
import type { DAVResponse } from 'tsdav'
import type { ProviderEvent } from '../../../schemas/sync/index.js'
import { retryAfterMs } from '../../../lib/backoff.js'
import { ProviderAuthorizationRevokedError, ProviderCursorExpiredError, ProviderUnavailableError, providerError, type ProviderContext, type ProviderFailureKind } from '../../lib/providers/port.js'
import { AddressRefusedError } from '../address-guard.js'
import { ProviderAnswerTooLargeError, type ProviderFetch } from '../buffered-fetch.js'
import { davResponsesOf, resourceOfResponse, text, type DavResponse, type EventsOfAnswer, type OnDavResponses } from './dav-answers.js'

/** No CalDAV calendar home was found at the URL (not a CalDAV server, or a wrong URL). */
export class CalDavDiscoveryError extends Error {
  override name = 'CalDavDiscoveryError'
}

/** The server's answer was larger than the answer limit (or held more than the parser takes). */
class CalDavAnswerTooLargeError extends ProviderUnavailableError {
  override name = 'CalDavAnswerTooLargeError'
}

/**
 * A DAV answer larger than this fails the request: a listing of hrefs and etags holds tens of
 * thousands of events within it, and a calendar too large to come in one answer is read in pages
 * (calendar-multiget).
 */
export const CALDAV_ANSWER_LIMIT_BYTES = 10 * 1024 * 1024

/**
 * The redirects RFC 6764 (section 5) names for a well-known URI, and 302 and 308, which servers
 * answer too; the target is asked the same PROPFIND, whichever it is, as CalDAV clients do.
 */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/** Redirects of `/.well-known/caldav` followed, at most. */
const WELL_KNOWN_REDIRECTS = 3

export const DAV_NAMESPACES = 'xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:ic="http://apple.com/ns/ical/"'

export function xmlEscape (value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')
}

function hrefOf (value: unknown): string | null {
  if (typeof value === 'object' && value !== null && 'href' in value) {
    const href = (value as { href: unknown }).href
    return text(Array.isArray(href) ? href[0] : href)
  }
  return text(value)
}

export function propsOf (response: DAVResponse): Record<string, unknown> {
  return (response.props ?? {}) as Record<string, unknown>
}

/** What says a collection changed: its sync token (RFC 6578) and its ctag, either null when the server has none. */
export interface CollectionState {
  syncToken: string | null
  ctag: string | null
}

/** A calendar resource as read: where it is, its version and its iCalendar text, and its events when the parse mapped them (EventsOfAnswer). */
export interface Resource {
  href: string
  etag: string | null
  ics: string
  events?: ProviderEvent[]
}

interface RequestOptions {
  /** A sync-collection report: 403, 409 and 410 say its token expired. */
  syncCollection?: boolean
  onResponses?: OnDavResponses
  events?: EventsOfAnswer
}

/** Whether a response's `raw` (dav-answers.ts) is a multistatus: one without responses still is. */
function isMultistatus (raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && 'multistatus' in raw
}

/** A request that brought no answer to read: too large (CalDavAnswerTooLargeError), refused, timed out, cut off. */
function unanswered (method: string, error: unknown): ProviderUnavailableError {
  const message = `the CalDAV server did not answer ${method} (${error instanceof Error ? error.name : 'failure'})`
  return error instanceof ProviderAnswerTooLargeError ? new CalDavAnswerTooLargeError(message, null) : new ProviderUnavailableError(message, null)
}

/** WebDAV and resource requests of CalDAV connections, each for the connection its context names. */
export class CalDavClient {
  readonly #transport: ProviderFetch
  readonly #timeoutMs: number

  constructor (transport: ProviderFetch, timeoutMs = 30_000) {
    this.#transport = transport
    this.#timeoutMs = timeoutMs
  }

  async collectionState (context: ProviderContext, calendarUrl: string): Promise<CollectionState> {
    const [response] = await this.request(context, calendarUrl, 'PROPFIND', '0', `<d:propfind ${DAV_NAMESPACES}><d:prop><d:sync-token/><cs:getctag/></d:prop></d:propfind>`)
    const props = response === undefined ? {} : propsOf(response)
    return { syncToken: text(props['syncToken']), ctag: text(props['getctag']) }
  }

  /** The resources named, with their data (calendar-multiget, RFC 4791 section 7.9). */
  async multiget (context: ProviderContext, calendarUrl: string, hrefs: string[]): Promise<Resource[]> {
    const named = hrefs.map((href) => `<d:href>${xmlEscape(href)}</d:href>`).join('')
    return await this.query(context, calendarUrl, `<c:calendar-multiget ${DAV_NAMESPACES}><d:prop><d:getetag/><c:calendar-data/></d:prop>${named}</c:calendar-multiget>`)
  }

  /** The collection's resources a report names, hrefs and etags only. */
  async listing (context: ProviderContext, calendarUrl: string, body: string): Promise<Array<{ href: string, etag: string | null }>> {
    const collection = new URL(calendarUrl).pathname
    return (await this.request(context, calendarUrl, 'REPORT', '1', body))
      .filter((response) => response.href !== undefined && response.status !== 404)
      .map((response) => ({ href: new URL(response.href as string, calendarUrl).pathname, etag: text(propsOf(response)['getetag']) }))
      .filter((entry) => entry.href !== collection)
  }

  async query (context: ProviderContext, calendarUrl: string, body: string): Promise<Resource[]> {
    return (await this.#resourcesOf(context, calendarUrl, body)).found
  }

  /**
   * Every resource a calendar-query names, with its data, in one answer; null when that answer is
   * over the answer limit, or names a resource without its data (a server that leaves
   * calendar-data out of a query's answer): then the resources are to be listed and read in pages.
   * With `events`, the first resources come with their events, mapped as the answer was parsed.
   */
  async wholeQuery (context: ProviderContext, calendarUrl: string, body: string, events?: EventsOfAnswer): Promise<Resource[] | null> {
    try {
      const { found, withoutData } = await this.#resourcesOf(context, calendarUrl, body, events)
      return withoutData ? null : found
    } catch (error) {
      if (error instanceof CalDavAnswerTooLargeError) return null
      throw error
    }
  }

  async #resourcesOf (context: ProviderContext, calendarUrl: string, body: string, events?: EventsOfAnswer): Promise<{ found: Resource[], withoutData: boolean }> {
    const collection = new URL(calendarUrl).pathname
    const found: Resource[] = []
    let withoutData = false
    await this.request(context, calendarUrl, 'REPORT', '1', body, {
      events,
      onResponses: (responses) => {
        for (const response of responses) {
          const resource = resourceOfResponse(response, calendarUrl)
          if (resource === null) continue
          const { href, etag, ics } = resource
          if (ics !== null) found.push({ href, etag, ics, ...(response.events === undefined ? {} : { events: response.events }) })
          else if (href !== collection) withoutData = true
        }
      }
    })
    return { found, withoutData }
  }

  /** The calendar home, and the server the connection is pinned to: the one given, or where its well-known URI led (#wellKnown). */
  async discoverHome (context: ProviderContext, server: URL): Promise<{ home: string, serverUrl: string }> {
    const principalBody = `<d:propfind ${DAV_NAMESPACES}><d:prop><d:current-user-principal/></d:prop></d:propfind>`
    let principal: string | null = null
    let pinned = context
    // Why the last start found nothing (an address refused, an answer too large, no answer), for the operator's log.
    let failure: unknown = null
    const starts = [
      async () => await this.#wellKnown(context, server, principalBody),
      async () => ({ context, url: server.toString(), responses: await this.request(context, server.toString(), 'PROPFIND', '0', principalBody) })
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
        failure = error
      }
    }
    if (principal === null) {
      throw new CalDavDiscoveryError(`the server names no current-user-principal${failure instanceof Error ? ` (${failure.message})` : ''}`)
    }
    const [response] = await this.request(pinned, principal, 'PROPFIND', '0', `<d:propfind ${DAV_NAMESPACES}><d:prop><c:calendar-home-set/></d:prop></d:propfind>`)
    const home = response === undefined ? null : hrefOf(propsOf(response)['calendarHomeSet'])
    if (home === null) throw new CalDavDiscoveryError('the principal names no calendar-home-set')
    return { home: new URL(home, principal).toString(), serverUrl: this.server(pinned) }
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
        return { context: moved, url: url.toString(), responses: await this.request(moved, url.toString(), 'PROPFIND', '0', body) }
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

  server (context: ProviderContext): string {
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
      return await this.#transport(url, { method, headers, body, signal: AbortSignal.timeout(this.#timeoutMs) })
    } catch (error) {
      if (error instanceof ProviderAuthorizationRevokedError) throw error
      throw unanswered(method, error)
    }
  }

  /**
   * The responses of a multistatus answer, parsed off the event loop when large (dav-answers.ts),
   * each piece handed to `onResponses` as it is parsed; a failure's status as its error.
   */
  async #answer (response: Response, method: 'PROPFIND' | 'REPORT', options: RequestOptions = {}): Promise<DavResponse[]> {
    let responses: DavResponse[]
    try {
      responses = await davResponsesOf(response, options)
    } catch (error) {
      throw unanswered(method, error)
    }
    const first = responses[0]
    // A failed request comes back as a single answer without a multistatus.
    if (first !== undefined && responses.length === 1 && first.props === undefined && !first.ok) {
      if (options.syncCollection === true && (first.status === 403 || first.status === 409 || first.status === 410)) {
        throw new ProviderCursorExpiredError(`the CalDAV server no longer accepts the sync token (${first.status})`)
      }
      throw this.#failure(first.status, method, response.headers.get('retry-after'))
    }
    // So does a success that is no multistatus (a page of HTML, another document): read as one
    // without responses, it would say the collection is empty, and its events would be removed.
    if (first !== undefined && responses.length === 1 && first.props === undefined && !isMultistatus(first.raw)) {
      throw new ProviderUnavailableError(`the CalDAV server answered ${method} with ${response.status} but no multistatus`, null)
    }
    return responses
  }

  /** One WebDAV request and its multistatus answer. */
  async request (context: ProviderContext, url: string, method: 'PROPFIND' | 'REPORT', depth: '0' | '1', body: string, options: RequestOptions = {}): Promise<DavResponse[]> {
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
    if (new URL(url).origin !== new URL(this.server(context)).origin) {
      throw new AddressRefusedError(`the CalDAV server named a URL on another origin (${new URL(url).origin})`)
    }
  }

  async #fetch (context: ProviderContext, url: string, init: { method: string, headers?: Record<string, string>, body?: string }): Promise<Response> {
    this.#onServer(context, url)
    try {
      return await this.#transport(url, { ...init, headers: { ...this.#headers(context), ...init.headers }, signal: AbortSignal.timeout(this.#timeoutMs) })
    } catch (error) {
      if (error instanceof ProviderAuthorizationRevokedError) throw error
      throw unanswered(init.method, error)
    }
  }

  async get (context: ProviderContext, url: string): Promise<Resource | null> {
    const response = await this.#fetch(context, url, { method: 'GET' })
    const body = await response.text()
    if (response.status === 404 || response.status === 410) return null
    if (!response.ok) throw this.#failure(response.status, 'GET', response.headers.get('retry-after'))
    return { href: new URL(url).pathname, etag: response.headers.get('etag'), ics: body }
  }

  /** PUT with `If-Match: <etag>`, or `If-None-Match: *` when `etag` is null; answers the new etag. */
  async put (context: ProviderContext, url: string, ics: string, etag: string | null): Promise<string | null> {
    const response = await this.#fetch(context, url, {
      method: 'PUT',
      headers: { 'Content-Type': 'text/calendar; charset=utf-8', ...(etag === null ? { 'If-None-Match': '*' } : { 'If-Match': etag }) },
      body: ics
    })
    await response.arrayBuffer()
    if (!response.ok) throw this.#failure(response.status, 'PUT', response.headers.get('retry-after'))
    return response.headers.get('etag')
  }

  async delete (context: ProviderContext, url: string, etag: string | null): Promise<void> {
    const response = await this.#fetch(context, url, { method: 'DELETE', headers: etag === null ? {} : { 'If-Match': etag } })
    await response.arrayBuffer()
    if (response.status === 404 || response.status === 410) return
    if (!response.ok) throw this.#failure(response.status, 'DELETE', response.headers.get('retry-after'))
  }
}
