// Builds the Sync app for one test against dev/mongo (or MONGODB_URI), with a clock the test moves.
import { Writable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import { startMongo } from '../../dev/mongo/index.js'
import type { MongoUser } from '../../dev/mongo/index.js'
import { mintObjectId } from '../../lib/ids.js'
import { signInternalRequest } from '../../lib/internal-auth.js'
import type { SyncConfig } from '../../schemas/config.js'
import app from '../../sync/app.js'
import type { SyncAppOptions } from '../../sync/app.js'
import type { Clock } from '../../sync/lib/clock.js'
import { RecordingBackend } from './recording-backend.js'

export const INTERNAL_TOKEN = 'test-internal-token-0123456789abcdef'
export const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64')

export class ManualClock implements Clock {
  #ms: number
  constructor (start = Date.UTC(2026, 10, 21, 9, 0, 0)) { this.#ms = start }
  now (): Date { return new Date(this.#ms) }
  advance (ms: number): void { this.#ms += ms }
}

/** A database URI on the given server naming `database`. */
export function databaseUri (serverUri: string, database: string, credentials?: { user: string, password: string, authSource?: string }): string {
  const url = new URL(serverUri)
  url.pathname = `/${database}`
  if (credentials) {
    url.username = encodeURIComponent(credentials.user)
    url.password = encodeURIComponent(credentials.password)
    url.searchParams.set('authSource', credentials.authSource ?? 'admin')
  }
  return url.toString()
}

/** One MongoDB server for a test file: the one in MONGODB_URI, or a fresh dev/mongo stand-in. */
export async function startDatabase (t: Test, users?: MongoUser[]): Promise<string> {
  if (process.env.MONGODB_URI && !users) return process.env.MONGODB_URI
  const mongo = await startMongo(users ? { users } : {})
  t.teardown(() => mongo.close())
  return mongo.uri
}

export function testConfig (databaseUriValue: string, sync: Partial<SyncConfig['sync']> = {}): SyncConfig {
  return {
    runtime: { version: 'latest', nodeEnv: 'test', timezone: 'UTC', logLevel: 'info' },
    sync: {
      port: 3010,
      databaseUri: databaseUriValue,
      internalAuthToken: INTERNAL_TOKEN,
      callbackBaseUrl: 'https://sync.example.test/sync',
      postConnectRedirectUrl: 'https://web.example.test',
      serviceUrl: 'http://127.0.0.1:3010',
      cloudMutationMode: 'enabled',
      execution: 'active',
      credentialEncryptionKey: ENCRYPTION_KEY,
      // The tests' Radicale listens on loopback, which Sync otherwise refuses for a user's server.
      privateAddressAllowlist: ['127.0.0.1'],
      ...sync
    }
  }
}

export interface BuiltSyncApp {
  app: FastifyInstance
  clock: ManualClock
  config: SyncConfig
  /** Every log line written so far, parsed. */
  logs: Array<Record<string, unknown>>
  /** Sends a request signed as the backend would sign it. */
  signed: (options: { method: 'GET' | 'POST', url: string, body?: unknown, userId?: string | null }) => Promise<LightMyRequestResponse>
}

export interface BuildOptions extends Omit<SyncAppOptions, 'config' | 'clock'> {
  sync?: Partial<SyncConfig['sync']>
  /** A database on the server at serverUri; a fresh random name by default. */
  database?: string
  config?: SyncConfig
}

export async function buildSyncApp (t: Test, serverUri: string, options: BuildOptions = {}): Promise<BuiltSyncApp> {
  const clock = new ManualClock()
  const config = options.config ?? testConfig(databaseUri(serverUri, options.database ?? `sync_${randomBytes(4).toString('hex')}`), options.sync)
  const logs: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  const server = Fastify({ logger: { level: 'info', stream } })
  const { config: _ignored, sync: _sync, database: _database, ...appOptions } = options
  await server.register(fp(app), { config, clock, worker: { autoStart: false }, maintenance: { autoStart: false }, random: () => 0.5, backend: new RecordingBackend(), ...appOptions })
  t.teardown(async () => {
    // A shared real server keeps no test databases behind; dev/mongo vanishes with its process.
    if (process.env.MONGODB_URI && !options.config && !options.database) await server.syncDb.db.dropDatabase().catch(() => {})
    await server.close()
  })
  await server.ready()

  const signed: BuiltSyncApp['signed'] = async ({ method, url, body, userId }) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const headers: Record<string, string> = signInternalRequest({ secret: INTERNAL_TOKEN, method, path: url, body: payload, userId: userId ?? null }, clock.now().getTime())
    if (payload !== undefined) headers['content-type'] = 'application/json'
    const request: InjectOptions = { method, url, headers, ...(payload === undefined ? {} : { payload }) }
    return await server.inject(request)
  }
  return { app: server, clock, config, logs, signed }
}

export function newUserId (): string {
  return mintObjectId()
}

export { freePort } from '../ports.js'
