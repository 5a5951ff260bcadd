// The whole system in one test process, wired as the local stack wires it: the MongoDB and
// session-core stand-ins, the Google stand-in, the Sync service (active, its worker running) and
// the backend, each listening on 127.0.0.1. Sync's public callbacks are reached through the
// backend's /sync proxy, and Sync hands provider events to the backend's internal endpoint.
import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import { startGoogle, type AccountSetup, type GoogleStandIn } from '../../dev/google/index.js'
import syncApp from '../../sync/app.js'
import type { SyncConfig } from '../../schemas/config.js'
import { buildApp, freePort, signUp, startDependencies, uniqueEmail, type BuiltApp, type SignedIn, type Teardown } from '../helper.js'
import { testConfig as syncTestConfig } from '../sync/helper.js'
import { startWebServer, type WebServer } from '../../web/server.js'

export const GOOGLE_CLIENT = { clientId: 'e2e-calendar.apps.googleusercontent.com', clientSecret: 'GOCSPX-e2e-secret' }

export interface FullStack {
  google: GoogleStandIn
  backend: BuiltApp
  backendOrigin: string
  sync: FastifyInstance
  syncConfig: SyncConfig
  webUrl: string
  /** The web client, when `web` was asked for. */
  web?: WebServer
}

export interface FullStackOptions {
  accounts?: AccountSetup[]
  webUrl?: string
  /** The change-feed bridge's poll interval; tests shorten it, benchmarks keep the real 2 s. */
  feedPollIntervalMs?: number
  /**
   * Also serve the web client (browser tests): built with the Google client id and the stand-in's
   * origin, at `webUrl`; the backend gets the same Google client, so the client's own connect
   * (`/auth/extprovider/callback` -> `POST /api/auth/extprovider/connect`) reaches the stand-in.
   */
  web?: boolean
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
  const google = await startGoogle({
    clients: [{ ...GOOGLE_CLIENT, redirectUris: [`${backendOrigin}/sync/oauth/google/callback`, `${webUrl}/auth/extprovider/callback`] }],
    accounts: options.accounts ?? [],
    notificationRetries: 0
  })
  t.teardown(() => google.close())

  const backend = await buildApp(test, deps, { syncUrl, internalAuthToken }, (config) => ({
    ...config,
    web: { ...config.web, url: webUrl },
    backend: { ...config.backend, apiUrl: `${backendOrigin}/api`, originsAllowed: [webUrl] },
    sync: { ...config.sync, callbackBaseUrl: `${backendOrigin}/sync`, postConnectRedirectUrl: webUrl },
    ...(webPort === null ? {} : { extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url } })
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
    execution: 'active'
  })
  const syncConfig: SyncConfig = {
    ...base,
    backend: backend.config.backend,
    extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url }
  }
  const sync = Fastify({ logger: { level: 'warn' }, forceCloseConnections: true })
  await sync.register(fp(syncApp), { config: syncConfig, worker: { pollIntervalMs: 50 }, maintenance: { autoStart: false } })
  await sync.listen({ port: syncPort, host: '127.0.0.1' })
  t.teardown(() => sync.close())
  if (webPort === null) return { google, backend, backendOrigin, sync, syncConfig, webUrl }
  const web = await startWebServer({ port: webPort, apiUrl: `${backendOrigin}/api`, googleClientId: GOOGLE_CLIENT.clientId, googleEndpointBase: google.url })
  t.teardown(() => web.close())
  return { google, backend, backendOrigin, sync, syncConfig, webUrl, web }
}

/** A signed-up user of the backend whose Google account (the stand-in's) has the same email. */
export async function userWithGoogleAccount (stack: FullStack, label: string): Promise<SignedIn & { email: string }> {
  const email = uniqueEmail(label)
  stack.google.control.createAccount({ email, name: label, timeZone: 'Europe/Berlin' })
  return { ...await signUp(stack.backend.app, { email, password: `pw-for-${label}-1` }), email }
}

/**
 * What a browser does for a connect or reconnect: begin through the backend, consent at the
 * stand-in without its page, follow the redirect to the backend's /sync proxy, and land where
 * Sync sends it. Answers that last address.
 */
export async function connectGoogle (stack: FullStack, user: SignedIn & { email: string }, body: Record<string, unknown> = { provider: 'google', intent: 'connect' }): Promise<URL> {
  const begun = await stack.backend.app.inject({ method: 'POST', url: '/api/auth/connections/begin', headers: user.headers, payload: body })
  if (begun.statusCode !== 200) throw new Error(`begin answered ${begun.statusCode}: ${begun.body}`)
  const authorization = new URL(begun.json<{ authorizationUrl: string }>().authorizationUrl)
  authorization.searchParams.set('login_hint', user.email)
  authorization.searchParams.set('approve', '1')
  const consent = await fetch(authorization, { redirect: 'manual' })
  const callback = consent.headers.get('location')
  if (callback === null) throw new Error(`consent answered ${consent.status}`)
  const landed = await fetch(callback, { redirect: 'manual' })
  return new URL(landed.headers.get('location') ?? 'about:blank')
}
