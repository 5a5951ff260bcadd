// The Sync service against the Microsoft stand-in (see ../provider-harness.ts for what every
// provider's harness shares): Microsoft's client, its configuration key, Graph event bodies, and
// Graph calls made as a connection.
import type { Test } from 'tap'
import { startMicrosoft } from '../../../dev/microsoft/index.js'
import type { AccountSetup, MicrosoftStandIn } from '../../../dev/microsoft/index.js'
import type { SyncBeginConnectionResponse } from '../../../schemas/sync/index.js'
import { MicrosoftCalendarAdapter } from '../../../sync/providers/microsoft/adapter.js'
import { beginConnection, connectProviderAndSync, startSyncAgainst } from '../provider-harness.js'
import type { SyncUnderTest } from '../provider-harness.js'

export { consent, followCallback } from '../provider-harness.js'
export const CLIENT_ID = '8f1c2d3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f'
export const CLIENT_SECRET = 'microsoft-sync-test-secret'

export const WEB_CALLBACK = 'https://web.example.test/auth/extprovider2/callback'
export const ALICE = 'alice@example.com'

export interface Stack extends SyncUnderTest {
  microsoft: MicrosoftStandIn
}

export interface StackOptions {
  accounts?: AccountSetup[]
  /** Events per delta page. */
  pageSize?: number
  /** Events an import gathers before handing them over (1: each page on its own). */
  importBatchEvents?: number
}

export async function startStack (t: Test, options: StackOptions = {}): Promise<Stack> {
  const { standIn, ...stack } = await startSyncAgainst<MicrosoftStandIn>(t, {
    startStandIn: async (syncUrl, clock) => await startMicrosoft({
      clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${syncUrl}/oauth/microsoft/callback`] }],
      accounts: options.accounts ?? [{ email: ALICE, name: 'Alice', timeZone: 'W. Europe Standard Time' }],
      clock: () => clock.now().getTime(),
      notificationRetries: 0
    }),
    webCallback: WEB_CALLBACK,
    providerConfig: (microsoft) => ({ extprovider2: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: microsoft.url } }),
    // The configured adapter, with a page size small enough to page.
    appOptions: (microsoft, clock) => ({
      ...(options.importBatchEvents === undefined ? {} : { importBatchEvents: options.importBatchEvents }),
      ...(options.pageSize === undefined
        ? {}
        : { providers: { microsoft: new MicrosoftCalendarAdapter({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: microsoft.url, pageSize: options.pageSize, now: () => clock.now() }) } })
    })
  })
  return { microsoft: standIn, ...stack }
}

/** Asks Sync to begin a connect as the backend would (a signed internal call). */
export async function begin (stack: Stack, userId: string, body: Record<string, unknown> = { provider: 'microsoft', intent: 'connect' }): Promise<SyncBeginConnectionResponse> {
  return await beginConnection(stack, userId, body)
}

/** begin -> consent -> callback -> import and catch-up: a healthy connection. */
export async function connectAndSync (stack: Stack, email = ALICE): Promise<{ userId: string, connectionId: string, cid: string }> {
  return await connectProviderAndSync(stack, 'microsoft', email)
}

/** The id of an account's default calendar at the stand-in. */
export function defaultCalendar (stack: Stack, email = ALICE): string {
  const calendar = stack.microsoft.control.listAccounts().find((account) => account.email === email)?.calendars.find((entry) => entry.isDefaultCalendar)
  if (!calendar) throw new Error('no default calendar')
  return calendar.id
}

/** Graph event bodies for the control surface, around the manual clock's 2026-11-21. */
export const SAMPLE_EVENTS = {
  timed: {
    subject: 'Dentist',
    start: { dateTime: '2026-11-23T15:00:00', timeZone: 'W. Europe Standard Time' },
    end: { dateTime: '2026-11-23T16:00:00', timeZone: 'W. Europe Standard Time' }
  },
  newYork: {
    subject: 'Call with New York',
    start: { dateTime: '2026-11-24T10:00:00', timeZone: 'Eastern Standard Time' },
    end: { dateTime: '2026-11-24T10:30:00', timeZone: 'Eastern Standard Time' }
  },
  allDay: {
    subject: 'Holiday',
    isAllDay: true,
    start: { dateTime: '2026-12-24T00:00:00', timeZone: 'W. Europe Standard Time' },
    end: { dateTime: '2026-12-27T00:00:00', timeZone: 'W. Europe Standard Time' }
  },
  series: {
    subject: 'Weekly review',
    start: { dateTime: '2026-11-02T09:00:00', timeZone: 'W. Europe Standard Time' },
    end: { dateTime: '2026-11-02T10:00:00', timeZone: 'W. Europe Standard Time' },
    recurrence: {
      pattern: { type: 'weekly', interval: 1, daysOfWeek: ['monday'], firstDayOfWeek: 'sunday' },
      range: { type: 'numbered', startDate: '2026-11-02', numberOfOccurrences: 10 }
    }
  },
  // Far from today: only the full pass reads it.
  old: {
    subject: 'Last spring',
    start: { dateTime: '2026-03-02T09:00:00', timeZone: 'UTC' },
    end: { dateTime: '2026-03-02T10:00:00', timeZone: 'UTC' }
  }
}

/** A Graph GET as the connection (a refresh with its stored token: Microsoft keeps used ones working). */
export async function graphGet<T> (stack: Stack, connectionId: string, path: string): Promise<T> {
  const credential = await stack.sync.syncCredentials.load(connectionId)
  const form = new URLSearchParams({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, grant_type: 'refresh_token', refresh_token: credential?.['refreshToken'] ?? '' })
  const token = await (await fetch(`${stack.microsoft.url}/common/oauth2/v2.0/token`, { method: 'POST', body: form })).json() as { access_token: string }
  const response = await fetch(`${stack.microsoft.graphUrl}${path}`, { headers: { authorization: `Bearer ${token.access_token}` } })
  if (!response.ok) throw new Error(`Graph answered ${response.status}`)
  return await response.json() as T
}

/** The id of a series' occurrence whose original start falls on `day` (UTC). */
export async function occurrenceOn (stack: Stack, connectionId: string, seriesId: string, day: string): Promise<string> {
  const query = new URLSearchParams({ startDateTime: `${day}T00:00:00Z`, endDateTime: `${day}T23:59:59Z` })
  const page = await graphGet<{ value: Array<{ id: string }> }>(stack, connectionId, `/me/events/${seriesId}/instances?${query.toString()}`)
  const first = page.value[0]
  if (!first) throw new Error('no occurrence that day')
  return first.id
}
