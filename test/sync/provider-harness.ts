// The Sync service against a provider stand-in, over real HTTP on 127.0.0.1, the part that does not
// depend on the provider: a manual clock the stand-in shares, a recording stand-in of the backend's
// provider-events endpoint, and the Sync app listening on a port of its own so the stand-in can
// send browsers and notifications to it. Each provider's harness names its stand-in, client and
// configuration key, so the difference between providers stays in that provider's harness.
import { Writable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import { signInternalRequest } from '../../lib/internal-auth.js'
import { BROWSER_BINDER_HEADER } from '../../schemas/sync/index.js'
import type { EventChangeReport, ProviderWriteSubject, SyncBeginConnectionResponse } from '../../schemas/sync/index.js'
import type { SyncConfig } from '../../schemas/config.js'
import app from '../../sync/app.js'
import type { SyncAppOptions } from '../../sync/app.js'
import { NOTIFICATION_PULL_DELAY_MS } from '../../sync/lib/provider-sync.js'
import { SERVICE_TOKEN, startBackendStandIn, type BackendStandIn } from './backend-stand-in.js'
import { databaseUri, freePort, INTERNAL_TOKEN, ManualClock, newUserId, startDatabase, testConfig } from './helper.js'

const WEB_ORIGIN = 'https://web.example.test'

export interface SyncUnderTest {
  backend: BackendStandIn
  sync: FastifyInstance
  clock: ManualClock
  config: SyncConfig
  /** Sync's own origin (also sync.callbackBaseUrl here: no backend proxy in between). */
  syncUrl: string
  /** Sync's log lines, when `captureLogs` asked for them. */
  logs: Array<Record<string, unknown>>
  /** Runs due jobs until none is due (at most `rounds` ticks). */
  drain: (rounds?: number) => Promise<number>
}

export interface SyncAgainstOptions<S> {
  /** Starts the provider's stand-in with Sync's callback origin and the shared clock. */
  startStandIn: (syncUrl: string, clock: ManualClock) => Promise<S & { close: () => Promise<void> }>
  /** Where the web app is sent back to after a connect. */
  webCallback: string
  /** The provider's part of Sync's configuration (its client, at the stand-in). */
  providerConfig: (standIn: S) => Partial<SyncConfig>
  /** The provider's adapter options for the app (page sizes and the like). */
  appOptions?: (standIn: S, clock: ManualClock) => Partial<SyncAppOptions>
  sync?: Partial<SyncConfig['sync']>
  captureLogs?: boolean
}

export async function startSyncAgainst<S> (t: Test, options: SyncAgainstOptions<S>): Promise<SyncUnderTest & { standIn: S }> {
  const clock = new ManualClock()
  const port = await freePort()
  const syncUrl = `http://127.0.0.1:${port}`
  const standIn = await options.startStandIn(syncUrl, clock)
  t.teardown(() => standIn.close())
  const backend = await startBackendStandIn(t)
  const base = testConfig(databaseUri(await startDatabase(t), `sync_${randomBytes(4).toString('hex')}`), {
    callbackBaseUrl: syncUrl,
    postConnectRedirectUrl: options.webCallback,
    backendUrl: backend.url,
    ...options.sync
  })
  const config: SyncConfig = {
    ...base,
    backend: { port: 3000, apiUrl: 'http://127.0.0.1:9/api', originsAllowed: [WEB_ORIGIN], serviceToken: SERVICE_TOKEN },
    ...options.providerConfig(standIn)
  }
  const logs: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  const sync = Fastify({ logger: options.captureLogs === true ? { level: 'info', stream } : false })
  await sync.register(fp(app), {
    config,
    clock,
    worker: { autoStart: false },
    maintenance: { autoStart: false },
    random: () => 0.5,
    ...options.appOptions?.(standIn, clock)
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
  return { standIn, backend, sync, clock, config, syncUrl, logs, drain }
}

/** A POST of the backend to one of Sync's internal routes for a user, signed as the backend signs it. */
export async function internalPostAs (stack: Pick<SyncUnderTest, 'sync' | 'clock'>, userId: string, url: string, body: unknown): Promise<LightMyRequestResponse> {
  const payload = JSON.stringify(body)
  const headers = signInternalRequest({ secret: INTERNAL_TOKEN, method: 'POST', path: url, body: payload, userId }, stack.clock.now().getTime())
  return await stack.sync.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload })
}

/**
 * The binders of the browser that began each connect, by the attempt's state: what the backend's
 * cookie and proxy pass to Sync's callback (there is no backend in front of Sync here).
 */
const beganBrowser = new Map<string, string>()

/** Asks Sync to begin a connect as the backend would (a signed internal call); the browser keeps its binder. */
export async function beginConnection (stack: Pick<SyncUnderTest, 'sync' | 'clock'>, userId: string, body: Record<string, unknown>): Promise<SyncBeginConnectionResponse> {
  const answer = await internalPostAs(stack, userId, `/internal/users/${userId}/connections/begin`, body)
  if (answer.statusCode !== 200) throw new Error(`begin answered ${answer.statusCode}: ${answer.body}`)
  const begun = answer.json<SyncBeginConnectionResponse>()
  beganBrowser.set(new URL(begun.authorizationUrl).searchParams.get('state') ?? '', begun.browserBinder)
  return begun
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

/**
 * The browser following the provider's redirect to Sync's callback: where Sync sends it next. The
 * browser that began passes its binder as the backend's proxy would; `browser: 'another'` is one
 * that never began (a link sent to someone else).
 */
export async function followCallback (callbackUrl: string, headers: Record<string, string> = {}, browser: 'began' | 'another' = 'began'): Promise<{ status: number, location: URL }> {
  const binder = beganBrowser.get(new URL(callbackUrl).searchParams.get('state') ?? '')
  const sent = browser === 'began' && binder !== undefined ? { [BROWSER_BINDER_HEADER]: binder, ...headers } : headers
  const response = await fetch(callbackUrl, { redirect: 'manual', headers: sent })
  return { status: response.status, location: new URL(response.headers.get('location') ?? 'about:blank') }
}

/** begin -> consent -> callback -> import and catch-up: a healthy connection to `provider`. */
export async function connectProviderAndSync (
  stack: Pick<SyncUnderTest, 'sync' | 'clock' | 'drain'>,
  provider: string,
  email: string
): Promise<{ userId: string, connectionId: string, cid: string }> {
  const userId = newUserId()
  const started = await beginConnection(stack, userId, { provider, intent: 'connect' })
  const done = await followCallback(await consent(started.authorizationUrl, email))
  if (done.location.searchParams.get('status') !== 'connected') throw new Error(`connect ended with ${done.location.toString()}`)
  await stack.drain()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  if (!connection) throw new Error('no connection')
  return { userId, connectionId: connection._id.toHexString(), cid: started.correlationId }
}

/** The backend reporting a change of its own data, as its outbox does: the status Sync answers. */
export async function reportEventChange (stack: Pick<SyncUnderTest, 'sync' | 'clock'>, body: EventChangeReport): Promise<number> {
  return (await internalPostAs(stack, body.userId, '/internal/event-changes', body)).statusCode
}

/** An own event as the backend describes it for a provider write: lunch on 2026-11-24, Berlin time. */
export function lunchWriteSubject (stack: Pick<SyncUnderTest, 'clock'>, fields: Partial<ProviderWriteSubject> = {}): ProviderWriteSubject {
  return {
    content: { title: 'Lunch with Bo', startDate: '2026-11-24T12:00:00+01:00', endDate: '2026-11-24T13:00:00+01:00', isAllDay: false, timeZone: 'Europe/Berlin' },
    lastUpdated: stack.clock.now().toISOString(),
    ...fields
  }
}

/** The user's grant ends at the provider and its access tokens with it; Sync's next pull meets the dead grant. */
export async function revokeAtProviderAndPull (
  stack: Pick<SyncUnderTest, 'sync' | 'drain'>,
  control: { revoke: (email: string) => unknown, expireAccessTokens: (email: string) => unknown },
  email: string,
  userId: string
): Promise<void> {
  control.revoke(email)
  control.expireAccessTokens(email)
  await stack.sync.syncEngine.restart(userId)
  await stack.drain()
}
