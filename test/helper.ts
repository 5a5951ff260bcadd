import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import fp from 'fastify-plugin'
import supertokens from 'supertokens-node'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import { stringify } from 'yaml'
import tap, { type Test } from 'tap'
import app, { initSessionLibrary, serverOptions, type AppOptions } from '../app.js'
import { parseConfig } from '../lib/config.js'
import type { Config } from '../schemas/config.js'
import { startMongo } from '../dev/mongo/index.js'
import { startSessionCore } from '../dev/session-core/index.js'
import { setRequestDatabaseDeadline } from '../stores/database.js'
import { decodeJwt } from 'jose'

// Tests run against the stand-ins, or against real servers when their addresses are given:
// MONGODB_URI=... and SESSIONS_URI=... SESSIONS_KEY=... npm test

/** Anything with tap's `teardown`: a test, or a benchmark's own list of closers. */
export interface Teardown { teardown: (fn: () => unknown) => void }

export interface Dependencies {
  mongoUri: string
  // The URI with the database path replaced, for a fresh database per app.
  databaseUri: (database: string) => string
  replicaSet: boolean
  sessionsUri: string
  sessionsKey: string
  stopMongo: () => Promise<void>
}

export interface DependencyOptions {
  replicaSet?: boolean
  accessTokenValiditySec?: number
  refreshTokenValidityMin?: number
}

function withDatabase (uri: string, database: string): string {
  const url = new URL(uri)
  url.pathname = `/${database}`
  return url.toString()
}

// The session library keeps one configuration per process, so every app of a test file talks to
// one session core, started on first use and stopped when the file's tests end.
let sessionCore: Promise<{ sessionsUri: string, sessionsKey: string }> | undefined

function sessionCoreForThisProcess (options: DependencyOptions) {
  if (process.env.SESSIONS_URI !== undefined) {
    return Promise.resolve({ sessionsUri: process.env.SESSIONS_URI, sessionsKey: process.env.SESSIONS_KEY ?? '' })
  }
  sessionCore ??= (async () => {
    const sessionsKey = randomBytes(16).toString('hex')
    const core = await startSessionCore({
      apiKey: sessionsKey,
      ...(options.accessTokenValiditySec !== undefined ? { accessTokenValiditySec: options.accessTokenValiditySec } : {}),
      ...(options.refreshTokenValidityMin !== undefined ? { refreshTokenValidityMin: options.refreshTokenValidityMin } : {})
    })
    tap.teardown(() => core.close())
    return { sessionsUri: core.uri, sessionsKey }
  })()
  return sessionCore
}

export async function startDependencies (t: Test, options: DependencyOptions = {}): Promise<Dependencies> {
  let mongoUri = process.env.MONGODB_URI
  let stopMongo = async () => {}
  if (mongoUri === undefined) {
    const mongo = await startMongo({ replicaSet: options.replicaSet === true ? 'rs0' : undefined })
    mongoUri = mongo.uri
    stopMongo = async () => { await mongo.close() }
    t.teardown(stopMongo)
  }
  const { sessionsUri, sessionsKey } = await sessionCoreForThisProcess(options)
  const base = mongoUri
  return {
    mongoUri: base,
    databaseUri: (database) => withDatabase(base, database),
    replicaSet: /[?&]replicaSet=/.test(base),
    sessionsUri,
    sessionsKey,
    stopMongo
  }
}

export interface ConfigOverrides {
  nodeEnv?: Config['runtime']['nodeEnv']
  logLevel?: Config['runtime']['logLevel']
  syncUrl?: string
  internalAuthToken?: string
  apiDatabase?: string
  extra?: Record<string, unknown>
}

export const WEB_URL = 'http://localhost:9080'
const API_URL = 'http://localhost:3000/api'

// A configuration that went through the real loader, so tests run what production validates.
export function testConfig (deps: Dependencies, overrides: ConfigOverrides = {}): Config {
  const apiDatabase = overrides.apiDatabase ?? `calendar_${randomBytes(4).toString('hex')}`
  const document = {
    runtime: { nodeEnv: overrides.nodeEnv ?? 'test', timezone: 'UTC', logLevel: overrides.logLevel ?? 'info' },
    web: { url: WEB_URL },
    backend: { apiUrl: API_URL, originsAllowed: [WEB_URL], serviceToken: randomBytes(16).toString('hex') },
    database: { uri: deps.databaseUri(apiDatabase) },
    sessions: { uri: deps.sessionsUri, key: deps.sessionsKey === '' ? 'unused-key' : deps.sessionsKey },
    sync: {
      databaseUri: deps.databaseUri(`sync_${apiDatabase}`),
      internalAuthToken: overrides.internalAuthToken ?? randomBytes(16).toString('hex'),
      callbackBaseUrl: 'http://localhost:3010',
      postConnectRedirectUrl: WEB_URL,
      // Nothing listens there unless a test starts the Sync service and says so.
      serviceUrl: overrides.syncUrl ?? 'http://127.0.0.1:9',
      // The tests' Radicale listens on loopback, which Sync otherwise refuses for a user's server.
      privateAddressAllowlist: ['127.0.0.1'],
      credentialEncryptionKey: randomBytes(32).toString('base64')
    },
    ...overrides.extra
  }
  return parseConfig(stringify(document), 'backend').config
}

export interface CapturedLog {
  lines: () => Array<Record<string, unknown>>
  text: () => string
}

export function captureLog (): { stream: Writable, log: CapturedLog } {
  const chunks: string[] = []
  const stream = new Writable({
    write (chunk, _encoding, callback) {
      chunks.push(chunk.toString())
      callback()
    }
  })
  const text = () => chunks.join('')
  return {
    stream,
    log: {
      text,
      lines: () => text().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)
    }
  }
}

export interface BuiltApp {
  app: FastifyInstance
  config: Config
  log: CapturedLog
  // Every route the app registered, as Fastify saw it.
  routes: Array<{ method: string, url: string }>
}

// `configure` adjusts the validated configuration; `extend` adds test-only routes before ready.
// The stand-ins a test starts in its own process (the database, the session core with its password
// hashing) share the app's event loop, and the test's other processes share the machine's few
// cores, where a process waiting for a core sees its loop late: both would count as the app's
// overload and shed a test's requests at random (a one-second threshold still did, three test files
// at a time). An app
// built here does not shed (0 turns the check off); shedding itself is tested in
// test/events/bounded-cost.test.ts, and processes started from server.ts keep it.
export const IN_PROCESS_LOAD_SHEDDING = { maxEventLoopDelayMs: 0 }

// For the same reason a database call on a request gets 20 s here, not production's 2.5 s: the
// tests' database stand-in answers on the test's own event loop, which waits for a core while three
// other files run. The tests of that deadline set production's again (both database-faults files).
const TEST_REQUEST_DATABASE_DEADLINE_MS = 20_000
setRequestDatabaseDeadline(TEST_REQUEST_DATABASE_DEADLINE_MS)
// And an event route's whole deadline (production's 3 s) as long: a range read that expands series
// on a loaded machine took longer (e2e/microsoft-moved-occurrence). The database-faults file gives
// production's back.
const TEST_EVENT_REQUEST_DEADLINE_MS = 20_000

export async function buildApp (
  t: Test,
  deps: Dependencies,
  overrides: ConfigOverrides = {},
  configure?: (config: Config) => Config,
  extend?: (app: FastifyInstance) => void,
  appOptions: Pick<AppOptions, 'email' | 'eventRequestDeadlineMs'> = {}
): Promise<BuiltApp> {
  const baseConfig = testConfig(deps, overrides)
  const config = configure ? configure(baseConfig) : baseConfig
  const { stream, log } = captureLog()
  const options = serverOptions(config)
  const instance = Fastify({ ...options, logger: { ...(options.logger as object), transport: undefined, stream } })
  const routes: BuiltApp['routes'] = []
  instance.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url })
  })
  initSessionLibrary(config, instance.log)
  await instance.register(fp(app), { eventRequestDeadlineMs: TEST_EVENT_REQUEST_DEADLINE_MS, ...appOptions, config, loadShedding: IN_PROCESS_LOAD_SHEDDING })
  extend?.(instance)
  await instance.ready()
  t.teardown(() => instance.close())
  return { app: instance, config, log, routes }
}

export async function listen (app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')
  return `http://127.0.0.1:${address.port}`
}

export interface SignedIn {
  userId: string
  accessToken: string
  refreshToken: string
  // Ready-made headers for a native (header mode) client.
  headers: Record<string, string>
}

export function authFields (fields: Record<string, string>) {
  return { formFields: Object.entries(fields).map(([id, value]) => ({ id, value })) }
}

function userIdFromAccessToken (token: string): string {
  return (decodeJwt(token) as { sub: string }).sub
}

/**
 * Sends a request, and again after the wait a 429's Retry-After names (at most a minute, three
 * times), as a client would: a long run (a property test's many sequences) meets the backend's
 * per-address limits, which are right, from its one address.
 */
export async function afterRateLimit (send: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
  let response = await send()
  for (let retries = 0; response.statusCode === 429 && retries < 3; retries++) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(Number(response.headers['retry-after'] ?? 1), 60) * 1000))
    response = await send()
  }
  return response
}

async function headerModeAuth (app: FastifyInstance, path: string, fields: Record<string, string>): Promise<SignedIn> {
  const response = await afterRateLimit(async () => await app.inject({
    method: 'POST',
    url: `/api/auth/${path}`,
    headers: { 'sx-auth-mode': 'header', rid: 'emailpassword' },
    payload: authFields(fields)
  }))
  const body = response.json() as { status: string }
  if (response.statusCode !== 200 || body.status !== 'OK') {
    throw new Error(`${path} failed: ${response.statusCode} ${response.body}`)
  }
  const accessToken = String(response.headers['sx-access-token'])
  const refreshToken = String(response.headers['sx-refresh-token'])
  return {
    userId: userIdFromAccessToken(accessToken),
    accessToken,
    refreshToken,
    headers: { authorization: `Bearer ${accessToken}` }
  }
}

/** Proves the address of a password account (the session library's verification, without the mail); the next sign-in records it. */
export async function verifyEmail (userId: string, email: string): Promise<void> {
  const token = await EmailVerification.createEmailVerificationToken('public', supertokens.convertToRecipeUserId(userId), email)
  if (token.status !== 'OK') throw new Error(`no verification token: ${token.status}`)
  const verified = await EmailVerification.verifyEmailUsingToken('public', token.token)
  if (verified.status !== 'OK') throw new Error(`not verified: ${verified.status}`)
}

/** A password sign-up; without a name the account is named after the email's local part. */
export async function signUp (app: FastifyInstance, user: { email: string, password: string, name?: string }): Promise<SignedIn> {
  return await headerModeAuth(app, 'signup', { email: user.email, password: user.password, name: user.name ?? user.email.split('@')[0] ?? 'someone' })
}

export async function signIn (app: FastifyInstance, user: { email: string, password: string }): Promise<SignedIn> {
  return await headerModeAuth(app, 'signin', user)
}

let counter = 0
export function uniqueEmail (label = 'user'): string {
  counter += 1
  return `${label}-${counter}-${randomBytes(3).toString('hex')}@example.com`
}

export { freePort } from './ports.js'
