// An in-memory provider that does what the test scripts: calendars, import sizes, the result (or
// error) of each pull, and a record of every call, to drive the Sync service's state machine.
import type {
  GrantedCredential, ImportRequest, ImportResult, ProviderCalendar, ProviderContext, ProviderEventSink, ProviderPort, ProviderWrite, PullResult,
  Watch, WatchRequest, WriteResult
} from '../../sync/lib/providers/port.js'
import type { Provider, ProviderEvent } from '../../schemas/sync/index.js'

type Step<T> = T | Error

export function scriptedCalendar (calendarId: string, name: string, primary = false): ProviderCalendar {
  return { calendarId, name, primary, timeZone: 'UTC' }
}

function event (calendarId: string, n: number, status: ProviderEvent['status']): ProviderEvent {
  return {
    providerEventId: `${calendarId}-event-${n}`,
    updated: '2026-11-21T09:00:00.000Z',
    status,
    ...(status === 'confirmed' ? { content: { title: `Event ${n}`, startDate: '2026-11-21', endDate: '2026-11-22', isAllDay: true, timeZone: 'UTC' } } : {})
  }
}

export class ScriptedProvider implements ProviderPort {
  readonly provider: Provider
  calendars: ProviderCalendar[] = [scriptedCalendar('primary', 'Primary', true)]
  eventsPerCalendar = 3
  /** The full pass of an import hands its events over in this many pages. */
  pagesPerCalendar = 1
  /** Called before each page of a full pass is handed over (a test moves its clock here). */
  beforePage: (page: number) => void = () => {}
  readonly calls: Array<{ method: string, connectionId?: string, calendarId?: string, credential?: Record<string, string> }> = []
  readonly writes: ProviderWrite[] = []
  readonly #pulls = new Map<string, Array<Step<{ changed: number, deleted: number }>>>()
  readonly #failures = new Map<string, Error[]>()
  #cursorCounter = 0

  constructor (provider: Provider = 'google') {
    this.provider = provider
  }

  /** The next pull of `calendarId` answers this (or throws it). Unscripted pulls change nothing. */
  scriptPull (calendarId: string, ...steps: Array<Step<{ changed: number, deleted: number }>>): void {
    this.#pulls.set(calendarId, [...(this.#pulls.get(calendarId) ?? []), ...steps])
  }

  /** The next call of `method` throws `error` (once per error given). */
  failNext (method: keyof ProviderPort, ...errors: Error[]): void {
    this.#failures.set(method, [...(this.#failures.get(method) ?? []), ...errors])
  }

  authorizationUrl ({ state, redirectUri, codeChallenge }: { state: string, redirectUri: string, codeChallenge: string }): string {
    const url = new URL('https://accounts.example.test/authorize')
    url.searchParams.set('state', state)
    url.searchParams.set('redirect_uri', redirectUri)
    url.searchParams.set('code_challenge', codeChallenge)
    return url.toString()
  }

  async exchangeCode (): Promise<GrantedCredential> {
    return { credential: { refreshToken: 'refresh-from-code' }, refreshTokenIssued: true }
  }

  async listCalendars (context: ProviderContext): Promise<ProviderCalendar[]> {
    this.#record('listCalendars', context)
    return this.calendars
  }

  async importCalendar (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink): Promise<ImportResult> {
    this.#record('importCalendar', context, calendar.calendarId)
    if (request.window) {
      await sink({ events: [], nextPageToken: null })
      return { cursor: null }
    }
    const events = Array.from({ length: this.eventsPerCalendar }, (_, n) => event(calendar.calendarId, n, 'confirmed'))
    const perPage = Math.ceil(events.length / this.pagesPerCalendar)
    for (let page = 0; page < this.pagesPerCalendar; page++) {
      this.beforePage(page)
      const last = page === this.pagesPerCalendar - 1
      await sink({ events: events.slice(page * perPage, (page + 1) * perPage), nextPageToken: last ? null : `page-${page + 1}` })
    }
    return { cursor: this.#nextCursor() }
  }

  async pullChanges (context: ProviderContext, calendar: ProviderCalendar, _cursor: string, sink: ProviderEventSink): Promise<PullResult> {
    this.#record('pullChanges', context, calendar.calendarId)
    const step = this.#pulls.get(calendar.calendarId)?.shift() ?? { changed: 0, deleted: 0 }
    if (step instanceof Error) throw step
    const events = [
      ...Array.from({ length: step.changed }, (_, n) => event(calendar.calendarId, n, 'confirmed')),
      ...Array.from({ length: step.deleted }, (_, n) => event(calendar.calendarId, 100 + n, 'cancelled'))
    ]
    await sink({ events, nextPageToken: null })
    return { cursor: this.#nextCursor() }
  }

  /** What a write answers; by default written, with nothing for the backend to link. */
  writeResult: WriteResult = { outcome: 'written', event: null }

  async writeEvent (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite): Promise<WriteResult> {
    this.#record('writeEvent', context, calendar.calendarId)
    this.writes.push(write)
    return this.writeResult
  }

  async watch (context: ProviderContext, calendarId: string, request: WatchRequest): Promise<Watch> {
    this.#record('watch', context, calendarId)
    return { channelId: request.channelId, resourceId: `resource-${calendarId}`, expiresAt: request.expiresAt }
  }

  async unwatch (context: ProviderContext, watch: { channelId: string, resourceId: string }): Promise<void> {
    this.#record('unwatch', context, watch.channelId)
  }

  #record (method: string, context: ProviderContext, calendarId?: string): void {
    this.calls.push({ method, connectionId: context.connectionId, credential: context.credential, ...(calendarId === undefined ? {} : { calendarId }) })
    const error = this.#failures.get(method)?.shift()
    if (error) throw error
  }

  #nextCursor (): string {
    this.#cursorCounter++
    return `cursor-${this.#cursorCounter}`
  }
}
