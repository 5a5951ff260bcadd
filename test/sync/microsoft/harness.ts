// The Sync service against the Microsoft stand-in, over real HTTP on 127.0.0.1: the stand-in
// (sharing the test's manual clock), a recording stand-in of the backend's provider-events endpoint,
// and the Sync app listening on a port of its own so the stand-in can send browsers, validation
// requests and notifications to it.
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import { startMicrosoft } from '../../../dev/microsoft/index.js'
import type { AccountSetup, MicrosoftStandIn } from '../../../dev/microsoft/index.js'
import { signInternalRequest } from '../../../lib/internal-auth.js'
import type { BeginConnectionResponse } from '../../../schemas/sync/index.js'
import type { SyncConfig } from '../../../schemas/config.js'
import app from '../../../sync/app.js'
import { SERVICE_TOKEN, startBackendStandIn, type BackendStandIn } from '../backend-stand-in.js'
import { NOTIFICATION_PULL_DELAY_MS } from '../../../sync/lib/provider-sync.js'
import { MicrosoftCalendarAdapter } from '../../../sync/providers/microsoft/adapter.js'
import { databaseUri, freePort, INTERNAL_TOKEN, ManualClock, newUserId, startDatabase, testConfig } from '../helper.js'

export const CLIENT_ID = '8f1c2d3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f'
export const CLIENT_SECRET = 'microsoft-sync-test-secret'
export { SERVICE_TOKEN } from '../backend-stand-in.js'
export const WEB_CALLBACK = 'https://web.example.test/auth/extprovider2/callback'
export const ALICE = 'alice@example.com'

export interface Stack {
  microsoft: MicrosoftStandIn
  backend: BackendStandIn
  sync: FastifyInstance
  clock: ManualClock
  syncUrl: string
  /** Runs due jobs until none is due (at most `rounds` ticks). */
  drain: (rounds?: number) => Promise<number>
}

export interface StackOptions {
  accounts?: AccountSetup[]
  /** Events per delta page. */
  pageSize?: number
}

export async function startStack (t: Test, options: StackOptions = {}): Promise<Stack> {
  const clock = new ManualClock()
  const port = await freePort()
  const syncUrl = `http://127.0.0.1:${port}`
  const microsoft = await startMicrosoft({
    clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${syncUrl}/oauth/microsoft/callback`] }],
    accounts: options.accounts ?? [{ email: ALICE, name: 'Alice', timeZone: 'W. Europe Standard Time' }],
    clock: () => clock.now().getTime(),
    notificationRetries: 0
  })
  t.teardown(() => microsoft.close())
  const backend = await startBackendStandIn(t)
  const base = testConfig(databaseUri(await startDatabase(t), `sync_${randomBytes(4).toString('hex')}`), {
    callbackBaseUrl: syncUrl,
    postConnectRedirectUrl: WEB_CALLBACK,
    backendUrl: backend.url
  })
  const config: SyncConfig = {
    ...base,
    backend: { port: 3000, apiUrl: 'http://127.0.0.1:9/api', originsAllowed: ['https://web.example.test'], serviceToken: SERVICE_TOKEN },
    extprovider2: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: microsoft.url }
  }
  const sync = Fastify({ logger: false })
  await sync.register(fp(app), {
    config,
    clock,
    worker: { autoStart: false },
    maintenance: { autoStart: false },
    random: () => 0.5,
    // The configured adapter, with a page size small enough to page.
    ...(options.pageSize === undefined
      ? {}
      : { providers: { microsoft: new MicrosoftCalendarAdapter({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: microsoft.url, pageSize: options.pageSize, now: () => clock.now() }) } })
  })
  await sync.listen({ host: '127.0.0.1', port })
  t.teardown(() => sync.close())
  const drain = async (rounds = 10): Promise<number> => {
    // Pulls asked for by notifications wait a moment for the rest of a burst: that moment passes.
    clock.advance(NOTIFICATION_PULL_DELAY_MS)
    let ran = 0
    for (let round = 0; round < rounds; round++) {
      const now = await sync.syncJobWorker.tick()
      if (now === 0) break
      ran += now
    }
    return ran
  }
  return { microsoft, backend, sync, clock, syncUrl, drain }
}

/** Asks Sync to begin a connect as the backend would (a signed internal call). */
export async function begin (stack: Stack, userId: string, body: Record<string, unknown> = { provider: 'microsoft', intent: 'connect' }): Promise<BeginConnectionResponse> {
  const url = `/internal/users/${userId}/connections/begin`
  const payload = JSON.stringify(body)
  const headers = signInternalRequest({ secret: INTERNAL_TOKEN, method: 'POST', path: url, body: payload, userId }, stack.clock.now().getTime())
  const answer = await stack.sync.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload })
  if (answer.statusCode !== 200) throw new Error(`begin answered ${answer.statusCode}: ${answer.body}`)
  return answer.json<BeginConnectionResponse>()
}

/** The stand-in's consent without a page: where it sends the browser back to (Sync's callback). */
export async function consent (authorizationUrl: string, email: string, approve = true): Promise<string> {
  const url = new URL(authorizationUrl)
  url.searchParams.set('login_hint', email)
  url.searchParams.set('approve', approve ? '1' : '0')
  const response = await fetch(url, { redirect: 'manual' })
  const location = response.headers.get('location')
  if (response.status !== 302 || location === null) throw new Error(`consent answered ${response.status}: ${await response.text()}`)
  return location
}

/** The browser following the provider's redirect to Sync's callback: where Sync sends it next. */
export async function followCallback (callbackUrl: string): Promise<{ status: number, location: URL }> {
  const response = await fetch(callbackUrl, { redirect: 'manual' })
  return { status: response.status, location: new URL(response.headers.get('location') ?? 'about:blank') }
}

/** begin -> consent -> callback -> import and catch-up: a healthy connection. */
export async function connectAndSync (stack: Stack, email = ALICE): Promise<{ userId: string, connectionId: string }> {
  const userId = newUserId()
  const started = await begin(stack, userId)
  const done = await followCallback(await consent(started.authorizationUrl, email))
  if (done.location.searchParams.get('status') !== 'connected') throw new Error(`connect ended with ${done.location.toString()}`)
  await stack.drain()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  if (!connection) throw new Error('no connection')
  return { userId, connectionId: connection._id.toHexString() }
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
