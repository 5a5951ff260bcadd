// An in-memory provider that does what the test scripts: calendars, import sizes, the result (or
// error) of each pull, and a record of every call, to drive the Sync service's state machine.
import type {
  ImportResult, ProviderCalendar, ProviderContext, ProviderPort, PullResult, Watch, WatchRequest
} from '../../sync/lib/providers/port.js'
import type { EventOperation, Provider } from '../../schemas/sync/index.js'

type Step<T> = T | Error

export class ScriptedProvider implements ProviderPort {
  readonly provider: Provider
  calendars: ProviderCalendar[] = [{ calendarId: 'primary', name: 'Primary' }]
  eventsPerCalendar = 3
  readonly calls: Array<{ method: string, connectionId?: string, calendarId?: string, credential?: Record<string, string> }> = []
  readonly writes: Array<{ eventId: string, operation: EventOperation, calendarId: string | null }> = []
  readonly #pulls = new Map<string, Array<Step<Omit<PullResult, 'cursor'>>>>()
  readonly #failures = new Map<string, Error[]>()
  #cursorCounter = 0

  constructor (provider: Provider = 'google') {
    this.provider = provider
  }

  /** The next pull of `calendarId` answers this (or throws it). Unscripted pulls change nothing. */
  scriptPull (calendarId: string, ...steps: Array<Step<Omit<PullResult, 'cursor'>>>): void {
    this.#pulls.set(calendarId, [...(this.#pulls.get(calendarId) ?? []), ...steps])
  }

  /** The next call of `method` throws `error` (once per error given). */
  failNext (method: keyof ProviderPort, ...errors: Error[]): void {
    this.#failures.set(method, [...(this.#failures.get(method) ?? []), ...errors])
  }

  authorizationUrl ({ state, redirectUri }: { state: string, redirectUri: string }): string {
    const url = new URL('https://accounts.example.test/authorize')
    url.searchParams.set('state', state)
    url.searchParams.set('redirect_uri', redirectUri)
    return url.toString()
  }

  async listCalendars (context: ProviderContext): Promise<ProviderCalendar[]> {
    this.#record('listCalendars', context)
    return this.calendars
  }

  async importCalendar (context: ProviderContext, calendarId: string): Promise<ImportResult> {
    this.#record('importCalendar', context, calendarId)
    return { eventCount: this.eventsPerCalendar, cursor: this.#nextCursor() }
  }

  async pullChanges (context: ProviderContext, calendarId: string, _cursor: string): Promise<PullResult> {
    this.#record('pullChanges', context, calendarId)
    const step = this.#pulls.get(calendarId)?.shift() ?? { changed: 0, deleted: 0 }
    if (step instanceof Error) throw step
    return { ...step, cursor: this.#nextCursor() }
  }

  async writeEvent (context: ProviderContext, change: { eventId: string, operation: EventOperation, calendarId: string | null }): Promise<void> {
    this.#record('writeEvent', context)
    this.writes.push(change)
  }

  async watch (context: ProviderContext, calendarId: string, request: WatchRequest): Promise<Watch> {
    this.#record('watch', context, calendarId)
    return { channelId: request.channelId, resourceId: `resource-${calendarId}`, expiresAt: request.expiresAt }
  }

  async unwatch (context: ProviderContext, watch: { channelId: string, resourceId: string }): Promise<void> {
    this.#record('unwatch', context, watch.channelId)
  }

  verifyNotification (headers: Record<string, string | string[] | undefined>, expected: { channelId: string, token: string }): boolean {
    return headers['x-channel-id'] === expected.channelId && headers['x-channel-token'] === expected.token
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
