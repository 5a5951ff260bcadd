// The Sync service against the Google stand-in, over real HTTP on 127.0.0.1: the stand-in (sharing
// the test's manual clock), a recording stand-in of the backend's provider-events endpoint, and the
// Sync app listening on a port of its own so the stand-in can send browsers and notifications to it.
import { Writable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import { startGoogle } from '../../../dev/google/index.js'
import type { AccountSetup, GoogleStandIn } from '../../../dev/google/index.js'
import { signInternalRequest } from '../../../lib/internal-auth.js'
import type { BeginConnectionResponse } from '../../../schemas/sync/index.js'
import app from '../../../sync/app.js'
import { SERVICE_TOKEN, startBackendStandIn, type BackendStandIn } from '../backend-stand-in.js'
import { NOTIFICATION_PULL_DELAY_MS } from '../../../sync/lib/provider-sync.js'
import type { SyncAppOptions } from '../../../sync/app.js'
import { databaseUri, freePort, INTERNAL_TOKEN, ManualClock, newUserId, startDatabase, testConfig } from '../helper.js'
import type { SyncConfig } from '../../../schemas/config.js'

export const CLIENT_ID = '123456789012-sync.apps.googleusercontent.com'
export const CLIENT_SECRET = 'GOCSPX-sync-test-secret'
export { SERVICE_TOKEN } from '../backend-stand-in.js'
export const WEB_CALLBACK = 'https://web.example.test/auth/extprovider/callback'
export const ALICE = 'alice@example.com'

export interface Stack {
  google: GoogleStandIn
  backend: BackendStandIn
  sync: FastifyInstance
  clock: ManualClock
  config: SyncConfig
  /** Sync's own origin (also sync.callbackBaseUrl here: no backend proxy in between). */
  syncUrl: string
  logs: Array<Record<string, unknown>>
  /** Runs due jobs until none is due (at most `rounds` ticks). */
  drain: (rounds?: number) => Promise<number>
}

export interface StackOptions {
  accounts?: AccountSetup[]
  pageSize?: number
  sync?: Partial<SyncConfig['sync']>
  appOptions?: Partial<SyncAppOptions>
  analytics?: { key: string, host: string }
}

export async function startStack (t: Test, options: StackOptions = {}): Promise<Stack> {
  const clock = new ManualClock()
  const port = await freePort()
  const syncUrl = `http://127.0.0.1:${port}`
  const google = await startGoogle({
    clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${syncUrl}/oauth/google/callback`] }],
    accounts: options.accounts ?? [{ email: ALICE, name: 'Alice', timeZone: 'Europe/Berlin', calendars: [{ summary: 'Work' }] }],
    clock: () => clock.now().getTime(),
    notificationRetries: 0
  })
  t.teardown(() => google.close())
  const backend = await startBackendStandIn(t)
  const base = testConfig(databaseUri(await startDatabase(t), `sync_${randomBytes(4).toString('hex')}`), {
    callbackBaseUrl: syncUrl,
    postConnectRedirectUrl: WEB_CALLBACK,
    backendUrl: backend.url,
    ...options.sync
  })
  const config: SyncConfig = {
    ...base,
    backend: { port: 3000, apiUrl: 'http://127.0.0.1:9/api', originsAllowed: ['https://web.example.test'], serviceToken: SERVICE_TOKEN },
    extprovider: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: google.url },
    ...(options.analytics === undefined ? {} : { analytics: options.analytics })
  }
  const logs: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  const sync = Fastify({ logger: { level: 'info', stream } })
  await sync.register(fp(app), {
    config,
    clock,
    worker: { autoStart: false },
    maintenance: { autoStart: false },
    random: () => 0.5,
    ...(options.pageSize === undefined ? {} : { google: { pageSize: options.pageSize } }),
    ...options.appOptions
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
  return { google, backend, sync, clock, config, syncUrl, logs, drain }
}

/** Asks Sync to begin a connect as the backend would (a signed internal call). */
export async function begin (stack: Stack, userId: string, body: Record<string, unknown> = { provider: 'google', intent: 'connect' }): Promise<BeginConnectionResponse> {
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
export async function followCallback (callbackUrl: string, headers: Record<string, string> = {}): Promise<{ status: number, location: URL }> {
  const response = await fetch(callbackUrl, { redirect: 'manual', headers })
  return { status: response.status, location: new URL(response.headers.get('location') ?? 'about:blank') }
}

/** begin -> consent -> callback -> import and catch-up: a healthy connection. */
export async function connectAndSync (stack: Stack, email = ALICE): Promise<{ userId: string, connectionId: string, cid: string }> {
  const userId = newUserId()
  const started = await begin(stack, userId)
  const done = await followCallback(await consent(started.authorizationUrl, email))
  if (done.location.searchParams.get('status') !== 'connected') throw new Error(`connect ended with ${done.location.toString()}`)
  await stack.drain()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  if (!connection) throw new Error('no connection')
  return { userId, connectionId: connection._id.toHexString(), cid: started.correlationId }
}

/** Google event bodies for the control surface, around the manual clock's 2026-11-21. */
export const SAMPLE_EVENTS = {
  timed: { summary: 'Dentist', start: { dateTime: '2026-11-23T15:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-11-23T16:00:00+01:00', timeZone: 'Europe/Berlin' } },
  allDay: { summary: 'Holiday', start: { date: '2026-12-24' }, end: { date: '2026-12-27' } },
  series: {
    summary: 'Weekly review',
    start: { dateTime: '2026-11-02T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-02T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10']
  },
  // Far from today: only the full pass reads it.
  old: { summary: 'Last year', start: { date: '2025-03-01' }, end: { date: '2025-03-02' } }
}
