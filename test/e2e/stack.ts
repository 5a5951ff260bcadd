// The whole system in one test process, wired as the local stack wires it: the MongoDB and
// session-core stand-ins, the Google stand-in (and, when asked for, the Microsoft one), the Sync
// service (active, its worker running) and the backend, each listening on 127.0.0.1. Sync's public callbacks are reached through the
// backend's /sync proxy, and Sync hands provider events to the backend's internal endpoint.
import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import { startGoogle, type AccountSetup, type GoogleStandIn } from '../../dev/google/index.js'
import { startMicrosoft, type AccountSetup as MicrosoftAccountSetup, type MicrosoftStandIn } from '../../dev/microsoft/index.js'
import syncApp, { syncServerOptions } from '../../sync/app.js'
import type { CalDavAdapterOptions } from '../../sync/providers/caldav/adapter.js'
import type { SyncConfig } from '../../schemas/config.js'
import type { Clock } from '../../sync/lib/clock.js'
import { buildApp, freePort, signUp, startDependencies, uniqueEmail, type BuiltApp, type SignedIn, type Teardown } from '../helper.js'
import { testConfig as syncTestConfig } from '../sync/helper.js'
import { startWebServer, type WebServer } from '../../web/server.js'
import { sessionOf } from '../backend/provider-fixtures.js'
import { OUTBOX_COLLECTION } from '../../stores/outbox.js'
import { waitUntil } from '../processes.js'
import { startGoogleInThread, startMicrosoftInThread } from './stand-in-threads.js'
import type { Radicale } from '../../dev/radicale.js'
import type { CalendarEvent } from '../../web/src/lib/events.js'

export const GOOGLE_CLIENT = { clientId: 'e2e-calendar.apps.googleusercontent.com', clientSecret: 'GOCSPX-e2e-secret' }
// Shaped like an Entra application (client) id, as config rules may check real-looking values.
export const MICROSOFT_CLIENT = { clientId: '3b7e9c1a-5d2f-4e8b-a6c4-e2e0c0ffee01', clientSecret: 'e2e-microsoft-secret' }

export interface FullStack {
  google: GoogleStandIn
  backend: BuiltApp
  backendOrigin: string
  sync: FastifyInstance
  syncConfig: SyncConfig
  webUrl: string
  /** The web client, when `web` was asked for. */
  web?: WebServer
  /** The Microsoft stand-in, when `microsoft` was asked for. */
  microsoft?: MicrosoftStandIn
}

/** A stack started with `microsoft`: its stand-in is there. */
export type FullStackWithMicrosoft = FullStack & { microsoft: MicrosoftStandIn }

export interface FullStackOptions {
  accounts?: AccountSetup[]
  webUrl?: string
  /** The change-feed bridge's poll interval; tests shorten it, benchmarks keep the real 2 s. */
  feedPollIntervalMs?: number
  /**
   * Also serve the web client (browser tests): built with the Google client id and the stand-in's
   * origin (and Microsoft's, with `microsoft`), at `webUrl`; the backend gets the same Google client, so the client's own connect
   * (`/auth/extprovider/callback` -> `POST /api/auth/extprovider/connect`) reaches the stand-in.
   */
  web?: boolean
  /**
   * Also start the Microsoft stand-in and give Sync its client (extprovider2), so a user can connect
   * a Microsoft calendar through the backend (`connectMicrosoft`). Off by default: without it Sync
   * has no Microsoft adapter, as in a deployment that configures Google only.
   */
  microsoft?: boolean | { accounts?: MicrosoftAccountSetup[] }
  /** How Sync's CalDAV adapter reaches servers (tests put another client's change between two requests). */
  caldavFetch?: CalDavAdapterOptions['fetch']
  /** analytics.key and analytics.host for the backend, Sync and the web bundle alike. */
  analytics?: { key: string, host: string }
  /** maps.placesApiKey, fixed into the web bundle. */
  placesApiKey?: string
  /** The Sync service's clock (a test's manual clock moves its job timings; the rest of the stack keeps real time). */
  syncClock?: Clock
  /** sync.maxConcurrency: how many jobs Sync's worker runs at once. */
  syncMaxConcurrency?: number
  /**
   * Run the Google and Microsoft stand-ins each on a thread of its own (stand-in-threads.ts), as the
   * real services run on machines of their own: for benchmarks, where the time a provider takes to
   * render a page must not be charged to the service that reads ahead while it writes.
   */
  standInThreads?: boolean
  /**
   * How often Sync's worker looks for jobs due later (a retry, a wait; one queued now is claimed at
   * once): 250 ms unless given, short enough that tests need not wait for them, long enough that an
   * idle stack costs little (at 50 ms it took a tenth of a core, with four files side by side).
   */
  syncJobPollIntervalMs?: number
  /** Where Sync's log goes, and from which level (default: stderr, from warn). */
  syncLog?: { stream: NodeJS.WritableStream, level: string }
  /** Both services serve their internal port (metrics, liveness, readiness) on a free port of 127.0.0.1. */
  metrics?: boolean
}

export async function startFullStack (t: Teardown, options: FullStackOptions = {}): Promise<FullStack> {
  const test = t as Test
  const deps = await startDependencies(test, { replicaSet: true })
  const [backendPort, syncPort] = [await freePort(), await freePort()]
  const webPort = options.web === true ? await freePort() : null
  const backendOrigin = `http://127.0.0.1:${backendPort}`
  const syncUrl = `http://127.0.0.1:${syncPort}`
  const webUrl = webPort === null ? options.webUrl ?? 'http://127.0.0.1:9' : `http://127.0.0.1:${webPort}`
  const internalAuthToken = randomBytes(16).toString('hex')
  const google = await (options.standInThreads === true ? startGoogleInThread : startGoogle)({
    clients: [{ ...GOOGLE_CLIENT, redirectUris: [`${backendOrigin}/sync/oauth/google/callback`, `${webUrl}/auth/extprovider/callback`] }],
    accounts: options.accounts ?? [],
    notificationRetries: 0
  })
  t.teardown(() => google.close())
  const microsoft = options.microsoft === undefined || options.microsoft === false
    ? undefined
    : await (options.standInThreads === true ? startMicrosoftInThread : startMicrosoft)({
      // Sync's connect callback, and the web client's return route of a Microsoft sign-in.
      clients: [{ ...MICROSOFT_CLIENT, redirectUris: [`${backendOrigin}/sync/oauth/microsoft/callback`, `${webUrl}/auth/extprovider/callback`] }],
      accounts: options.microsoft === true ? [] : options.microsoft.accounts ?? [],
      // A failed delivery is a test failure to see, not something to retry for seconds.
      notificationRetries: 0
    })
  if (microsoft !== undefined) t.teardown(() => microsoft.close())

  const backend = await buildApp(test, deps, { syncUrl, internalAuthToken }, (config) => ({
    ...config,
    web: { ...config.web, url: webUrl },
    backend: { ...config.backend, apiUrl: `${backendOrigin}/api`, originsAllowed: [webUrl], ...(options.metrics === true ? { metricsPort: 0 } : {}) },
    sync: { ...config.sync, callbackBaseUrl: `${backendOrigin}/sync`, postConnectRedirectUrl: webUrl },
    ...(webPort === null ? {} : { extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url } }),
    // The backend's Microsoft sign-in uses the same application as Sync, as in a deployment.
    ...(microsoft === undefined ? {} : { extprovider2: { ...MICROSOFT_CLIENT, endpointBase: microsoft.url } }),
    ...(options.analytics === undefined ? {} : { analytics: options.analytics })
  }))
  await backend.app.listen({ port: backendPort, host: '127.0.0.1' })
  // Stream tests wait for fan-out; a shorter poll keeps them quick without changing what happens.
  backend.app.changeFeed.configure({ pollIntervalMs: options.feedPollIntervalMs ?? 100 })

  const base = syncTestConfig(deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`), {
    internalAuthToken,
    callbackBaseUrl: `${backendOrigin}/sync`,
    postConnectRedirectUrl: webUrl,
    backendUrl: backendOrigin,
    credentialEncryptionKey: backend.config.sync.credentialEncryptionKey,
    execution: 'active',
    ...(options.syncMaxConcurrency === undefined ? {} : { maxConcurrency: options.syncMaxConcurrency })
  })
  const syncConfig: SyncConfig = {
    ...base,
    ...(options.metrics === true ? { sync: { ...base.sync, metricsPort: 0 } } : {}),
    backend: backend.config.backend,
    extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url },
    ...(microsoft === undefined ? {} : { extprovider2: { ...MICROSOFT_CLIENT, endpointBase: microsoft.url } }),
    ...(options.analytics === undefined ? {} : { analytics: options.analytics })
  }
  // Sync's own server options (request ids, validation), as sync/server.ts runs it; the log as the test asks.
  const sync = Fastify({
    ...syncServerOptions(syncConfig),
    logger: { level: options.syncLog?.level ?? process.env['SYNC_LOG_LEVEL'] ?? 'warn', ...(options.syncLog === undefined ? {} : { stream: options.syncLog.stream }) },
    forceCloseConnections: true
  })
  await sync.register(fp(syncApp), {
    config: syncConfig,
    worker: { pollIntervalMs: options.syncJobPollIntervalMs ?? 250 },
    maintenance: { autoStart: false },
    ...(options.syncClock === undefined ? {} : { clock: options.syncClock }),
    ...(options.caldavFetch === undefined ? {} : { caldav: { fetch: options.caldavFetch } })
  })
  await sync.listen({ port: syncPort, host: '127.0.0.1' })
  t.teardown(() => sync.close())
  const stack: FullStack = { google, backend, backendOrigin, sync, syncConfig, webUrl, ...(microsoft === undefined ? {} : { microsoft }) }
  if (webPort === null) return stack
  const web = await startWebServer({
    port: webPort,
    apiUrl: `${backendOrigin}/api`,
    googleClientId: GOOGLE_CLIENT.clientId,
    googleEndpointBase: google.url,
    // With the Microsoft stand-in, the bundle offers Microsoft sign-in through it too.
    ...(microsoft === undefined ? {} : { microsoftClientId: MICROSOFT_CLIENT.clientId, microsoftEndpointBase: microsoft.url }),
    ...(options.analytics === undefined ? {} : { analyticsKey: options.analytics.key, analyticsHost: options.analytics.host }),
    ...(options.placesApiKey === undefined ? {} : { placesApiKey: options.placesApiKey })
  })
  t.teardown(() => web.close())
  return { ...stack, web }
}

/**
 * What of the user's is on its way between the two sides: change reports waiting in the backend's
 * outbox, and in Sync the jobs of theirs that run, the writes that wait and the reads that are due
 * (a CalDAV connection always has its next poll queued for later). Two sides that agree while a
 * write is still under way may agree only for a moment.
 */
export async function onItsWay (stack: FullStack, userId: string): Promise<string[]> {
  const reports = await stack.backend.app.mongo.db.collection(OUTBOX_COLLECTION).countDocuments({ user: userId })
  const jobs = await stack.sync.syncJobQueue.list({
    userId,
    $or: [{ status: 'running' }, { status: 'queued', type: 'providerWrite' }, { status: 'queued', runAt: { $lte: new Date() } }]
  })
  return [...(reports > 0 ? [`${reports} change report(s) in the outbox`] : []), ...jobs.map((job) => `${job.type} ${job.status} (${job.coalescingKey}, due ${job.runAt.toISOString()})`)]
}

/**
 * The calendar a person picks for a new event that should reach a provider: the primary calendar
 * of the user's connection of that provider (or of their oldest connection), as `GET
 * /api/calendars` lists it. An event names its calendar; one that names none stays here.
 */
export async function primaryCalendarId (app: FastifyInstance, headers: Record<string, string>, provider?: string): Promise<string> {
  const answer = await app.inject({ method: 'GET', url: '/api/calendars', headers })
  const { calendars } = answer.json<{ calendars: Array<{ calendarId: string, provider: string, primary: boolean }> }>()
  const found = calendars.find((calendar) => calendar.primary && (provider === undefined || calendar.provider === provider))
  if (found === undefined) throw new Error(`no primary ${provider ?? 'provider'} calendar is listed (${answer.statusCode}: ${answer.body})`)
  return found.calendarId
}

/** The stack's Microsoft stand-in; a stack started without `microsoft` is a mistake of the caller. */
export function withMicrosoft (stack: FullStack): FullStackWithMicrosoft {
  const { microsoft } = stack
  if (microsoft === undefined) throw new Error('the stack was started without the Microsoft stand-in (startFullStack(t, { microsoft: true }))')
  return { ...stack, microsoft }
}

/** A signed-up user of the backend whose Google account (the stand-in's) has the same email. */
export async function userWithGoogleAccount (stack: FullStack, label: string): Promise<SignedIn & { email: string, password: string }> {
  const email = uniqueEmail(label)
  const password = `pw-for-${label}-1`
  stack.google.control.createAccount({ email, name: label, timeZone: 'Europe/Berlin' })
  return { ...await signUp(stack.backend.app, { email, password }), email, password }
}

/**
 * What a browser does for a connect or reconnect: begin through the backend, consent at the
 * stand-in without its page, follow the redirect to the backend's /sync proxy, and land where
 * Sync sends it. Answers that last address.
 */
export async function connectGoogle (stack: FullStack, user: SignedIn & { email: string }, body: Record<string, unknown> = { provider: 'google', intent: 'connect' }, returning?: () => void): Promise<URL> {
  return await connectThroughBackend(stack, user, body, returning)
}

// Both stand-ins take the same non-interactive consent (`login_hint` of an existing account and
// `approve=1`), so one browser walk serves either provider; the body names which. `returning` is
// called as the browser comes back from the consent, where the service's part begins.
async function connectThroughBackend (stack: FullStack, user: SignedIn & { email: string }, body: Record<string, unknown>, returning?: () => void): Promise<URL> {
  const { callback, cookie } = await beginAndConsent(stack, user, body)
  returning?.()
  const landed = await fetch(callback, { redirect: 'manual', headers: { cookie } })
  return new URL(landed.headers.get('location') ?? 'about:blank')
}

/**
 * Begin through the backend and consent at the stand-in: the callback address the provider sends
 * the browser to, and the `Cookie` header of the browser that began (its connect binder).
 */
export async function beginAndConsent (stack: FullStack, user: SignedIn & { email: string }, body: Record<string, unknown>): Promise<{ callback: string, cookie: string, setCookie: string }> {
  const begun = await stack.backend.app.inject({ method: 'POST', url: '/api/auth/connections/begin', headers: user.headers, payload: body })
  if (begun.statusCode !== 200) throw new Error(`begin answered ${begun.statusCode}: ${begun.body}`)
  const binder = begun.cookies.find((entry) => entry.name.startsWith('calendar_connect_'))
  if (binder === undefined) throw new Error('the begin set no connect binder')
  const authorization = new URL(begun.json<{ authorizationUrl: string }>().authorizationUrl)
  authorization.searchParams.set('login_hint', user.email)
  authorization.searchParams.set('approve', '1')
  const consent = await fetch(authorization, { redirect: 'manual' })
  const callback = consent.headers.get('location')
  if (callback === null) throw new Error(`consent answered ${consent.status}`)
  return { callback, cookie: `${binder.name}=${binder.value}`, setCookie: String(begun.headers['set-cookie']) }
}

/** A signed-up user of the backend whose Microsoft account (the stand-in's) has the same email. */
export async function userWithMicrosoftAccount (stack: FullStack, label: string, timeZone = 'W. Europe Standard Time'): Promise<SignedIn & { email: string, password: string }> {
  const email = uniqueEmail(label)
  const password = `pw-for-${label}-1`
  withMicrosoft(stack).microsoft.control.createAccount({ email, name: label, timeZone })
  return { ...await signUp(stack.backend.app, { email, password }), email, password }
}

/** The id of a Microsoft account's default calendar ("Calendar") at the stand-in. */
export function defaultMicrosoftCalendar (stack: FullStack, email: string): string {
  const account = withMicrosoft(stack).microsoft.control.listAccounts().find((entry) => entry.email === email)
  const calendar = account?.calendars.find((entry) => entry.isDefaultCalendar)
  if (calendar === undefined) throw new Error(`no Microsoft account ${email} at the stand-in`)
  return calendar.id
}

/**
 * `connectGoogle` for Microsoft: begin through the backend, consent at the Microsoft stand-in
 * without its page (`login_hint` + `approve`), follow the redirect to the backend's /sync proxy, and
 * answer where Sync sends the browser.
 */
export async function connectMicrosoft (stack: FullStack, user: SignedIn & { email: string }, body: Record<string, unknown> = { provider: 'microsoft', intent: 'connect' }, returning?: () => void): Promise<URL> {
  withMicrosoft(stack)
  return await connectThroughBackend(stack, user, body, returning)
}

export interface ProviderSignIn {
  session: NonNullable<ReturnType<typeof sessionOf>>
  body: { summary?: { provider?: string, mode?: string, calendar?: string } }
  /** The scopes the authorization URL asked the person to consent to. */
  askedScope: string | null
}

/**
 * What the web client does for a provider sign-in: the library's authorization URL for the web
 * callback, consent at the stand-in without its page (`login_hint` + `approve`), then the library's
 * sign-in-up route with the code the browser came back with.
 */
export async function signInWithProvider (stack: FullStack, thirdPartyId: 'google' | 'microsoft', email: string): Promise<ProviderSignIn> {
  const app = stack.backend.app
  const callback = `${stack.webUrl}/auth/extprovider/callback`
  const begun = await app.inject({ method: 'GET', url: `/api/auth/authorisationurl?thirdPartyId=${thirdPartyId}&redirectURIOnProviderDashboard=${encodeURIComponent(callback)}` })
  const { urlWithQueryParams, pkceCodeVerifier } = begun.json<{ urlWithQueryParams: string, pkceCodeVerifier?: string }>()
  const consent = new URL(urlWithQueryParams)
  consent.searchParams.set('login_hint', email)
  consent.searchParams.set('approve', '1')
  const back = new URL((await fetch(consent, { redirect: 'manual' })).headers.get('location') ?? '')
  const answer = await app.inject({
    method: 'POST',
    url: '/api/auth/signinup',
    headers: { 'sx-auth-mode': 'header', rid: 'thirdparty' },
    payload: {
      thirdPartyId,
      redirectURIInfo: {
        redirectURIOnProviderDashboard: callback,
        redirectURIQueryParams: Object.fromEntries(back.searchParams),
        ...(pkceCodeVerifier === undefined ? {} : { pkceCodeVerifier })
      }
    }
  })
  const session = sessionOf(answer.headers)
  if (session === undefined) throw new Error(`no session: ${answer.statusCode} ${answer.body}`)
  return { session, body: answer.json<ProviderSignIn['body']>(), askedScope: consent.searchParams.get('scope') }
}

/**
 * What a person does to connect a CalDAV account: the backend's route with the server, user name
 * and app password; answers once the connection's import is done (healthy).
 */
export async function connectCalDav (stack: FullStack, user: SignedIn, account: { serverUrl: string, username: string, password: string }): Promise<string> {
  const answer = await stack.backend.app.inject({ method: 'POST', url: '/api/connections/caldav', headers: user.headers, payload: account })
  if (answer.statusCode !== 200) throw new Error(`the CalDAV connect answered ${answer.statusCode}: ${answer.body}`)
  const connectionId = answer.json<{ connectionId: string }>().connectionId
  await waitUntil(async () => (await stack.sync.syncConnections.get(connectionId))?.state === 'healthy', 'the CalDAV connection healthy', 20_000)
  return connectionId
}

/** What a test of one user with Google, Microsoft and a CalDAV server connected reads and does. */
export interface ThreeConnected {
  /** The user's events in `range` (a query string of GET /api/event). */
  range: () => Promise<CalendarEvent[]>
  read: (id: string) => Promise<CalendarEvent>
  /** Nothing of the user's on its way between the two sides (onItsWay). */
  settled: () => Promise<boolean>
  /** Waits until `done`, asking for a pull (the refresh button) between looks. */
  refreshed: (done: () => Promise<boolean>, what: string) => Promise<void>
  atGoogle: (id: string) => Record<string, unknown>
  atMicrosoft: (id: string) => Record<string, unknown>
  atRadicale: (providerEventId: string) => ReturnType<Radicale['get']>
  /** The Microsoft account's default calendar, where its events are. */
  microsoftCalendar: string
}

/**
 * Connects the user's Google account, a Microsoft account of the same email and the CalDAV account
 * on `radicale`, and waits until all three are healthy (their imports done).
 */
export async function connectAllThree (t: Test, stack: FullStackWithMicrosoft, user: SignedIn & { email: string }, radicale: Radicale, account: { username: string, password: string }, range: string): Promise<ThreeConnected> {
  const app = stack.backend.app
  t.equal((await connectGoogle(stack, user)).searchParams.get('status'), 'connected')
  t.equal((await connectMicrosoft(stack, user)).searchParams.get('status'), 'connected')
  await connectCalDav(stack, user, { serverUrl: radicale.url, ...account })
  await waitUntil(async () => {
    const connections = await stack.sync.syncConnections.listByUser(user.userId)
    return connections.length === 3 && connections.every((connection) => connection.state === 'healthy')
  }, 'three connections healthy', 60_000)
  const microsoftCalendar = defaultMicrosoftCalendar(stack, user.email)
  return {
    range: async () => (await app.inject({ method: 'GET', url: `/api/event?${range}`, headers: user.headers })).json<CalendarEvent[]>(),
    read: async (id) => (await app.inject({ method: 'GET', url: `/api/event/${id}`, headers: user.headers })).json<CalendarEvent>(),
    settled: async () => (await onItsWay(stack, user.userId)).length === 0,
    refreshed: async (done, what) => {
      await waitUntil(async () => {
        if (await done()) return true
        await app.inject({ method: 'POST', url: '/api/connections/refresh', headers: user.headers })
        return false
      }, what, 30_000)
    },
    atGoogle: (id) => stack.google.control.storedEvents(user.email).find((event) => event['id'] === id) ?? {},
    atMicrosoft: (id) => stack.microsoft.control.storedEvents(microsoftCalendar).find((event) => event['id'] === id) ?? {},
    atRadicale: async (providerEventId) => await radicale.get(new URL(providerEventId, radicale.url).toString(), account.username, account.password),
    microsoftCalendar
  }
}
