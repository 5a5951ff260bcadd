// How long each class of Sync request takes to answer while the Sync database hangs (its process
// stopped with SIGSTOP: sockets open, nothing answers), against the same requests with the database
// up, measured in the same run. Target: every request answers (503 DATABASE_UNAVAILABLE with
// Retry-After, readiness 503) within about the per-call deadline (DATABASE_CALL_DEADLINE_MS, 2.5 s),
// never on the driver's own timeouts. test/sync/database-faults.test.ts asserts what is answered;
// the times live here. (bench/hung-database.ts does the same for the backend.)
import Fastify, { type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import { startMongoProcess } from './backend-process.js'
import { printHungAnswers, type HungCase } from './hung-answers.js'
import { mintObjectId } from '../lib/ids.js'
import { signInternalRequest } from '../lib/internal-auth.js'
import app from '../sync/app.js'
import { databaseUri, INTERNAL_TOKEN, testConfig } from '../test/sync/helper.js'
import { RecordingBackend } from '../test/sync/recording-backend.js'
import { ScriptedProvider } from '../test/sync/scripted-provider.js'

const { process: database, uri } = await startMongoProcess({ replicaSet: true })
const sync = Fastify({ logger: false })
await sync.register(fp(app), {
  config: testConfig(databaseUri(uri, 'sync_hung_database')),
  providers: { google: new ScriptedProvider() },
  backend: new RecordingBackend(),
  worker: { autoStart: false },
  maintenance: { autoStart: false }
})
await sync.ready()

const userId = mintObjectId()
const connection = await sync.syncEngine.authorize(userId, 'google', { refreshToken: 'bench-refresh-token' }, null)
await sync.syncJobWorker.tick()
await sync.syncJobWorker.tick()
const [watch] = await sync.syncWatches.listByConnection(connection._id.toHexString())
const { cursor } = await sync.syncFeed.page(userId, null, 1)

function signed (method: 'GET' | 'POST', url: string, body?: unknown, actingUser: string | null = userId): InjectOptions {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const headers: Record<string, string> = signInternalRequest({ secret: INTERNAL_TOKEN, method, path: url, body: payload, userId: actingUser }, Date.now())
  if (payload !== undefined) headers['content-type'] = 'application/json'
  return { method, url, headers, ...(payload === undefined ? {} : { payload }) }
}

let reports = 0
const cases: HungCase[] = [
  ['readiness', () => ({ method: 'GET', url: '/health/ready' })],
  ['event report', () => signed('POST', '/internal/event-changes', { userId, eventId: `event-${++reports}`, operation: 'update', idempotencyKey: `bench-key-${reports}` })],
  ['feed page', () => signed('GET', `/internal/changes?userId=${userId}&cursor=${encodeURIComponent(cursor)}`)],
  ['feed batch', () => signed('POST', '/internal/changes/batch', { users: [{ userId, cursor }] }, null)],
  ['metadata', () => signed('GET', `/internal/users/${userId}/metadata`)],
  ['calendars', () => signed('GET', `/internal/users/${userId}/calendars`)],
  ['refresh', () => signed('POST', `/internal/users/${userId}/sync/restart`)],
  ['begin', () => signed('POST', `/internal/users/${userId}/connections/begin`, { provider: 'google', intent: 'connect' })],
  ['notification', () => ({ method: 'POST', url: '/webhooks/google', headers: { 'x-goog-channel-id': watch?._id ?? 'none', 'x-goog-channel-token': 'not-the-token', 'x-goog-resource-id': watch?.resourceId ?? 'none', 'x-goog-resource-state': 'exists' } })]
]

try {
  await printHungAnswers('hung Sync database', cases, async (request) => await sync.inject(request), database)
} finally {
  await sync.close()
  database.kill('SIGINT')
}
