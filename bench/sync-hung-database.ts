// How long each class of Sync request takes to answer while the Sync database hangs (its process
// stopped with SIGSTOP: sockets open, nothing answers), against the same requests with the database
// up, measured in the same run. Target: every request answers (503 DATABASE_UNAVAILABLE with
// Retry-After, readiness 503) within about the per-call deadline (DATABASE_CALL_DEADLINE_MS, 2.5 s),
// never on the driver's own timeouts. test/sync/database-faults.test.ts asserts what is answered;
// the times live here. (bench/hung-database.ts does the same for the backend.)
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import Fastify, { type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import { DATABASE_CALL_DEADLINE_MS } from '../lib/mongo-errors.js'
import { mintObjectId } from '../lib/ids.js'
import { signInternalRequest } from '../lib/internal-auth.js'
import app from '../sync/app.js'
import { databaseUri, INTERNAL_TOKEN, testConfig } from '../test/sync/helper.js'
import { RecordingBackend } from '../test/sync/recording-backend.js'
import { ScriptedProvider } from '../test/sync/scripted-provider.js'

/** The MongoDB stand-in as a replica set in a process of its own, so that it can be stopped. */
async function startMongoProcess (): Promise<{ process: ChildProcess, uri: string }> {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const mongo = spawn(process.execPath, ['--import', 'tsx', 'dev/mongo/cli.ts', '--replica-set', 'rs0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  const uri = await new Promise<string>((resolve, reject) => {
    let output = ''
    mongo.stdout.on('data', (chunk) => {
      output += chunk
      const match = /mongodb:\/\/\S+/.exec(output)
      if (match) resolve(match[0])
    })
    mongo.once('exit', () => reject(new Error(`the MongoDB stand-in stopped: ${output}`)))
  })
  return { process: mongo, uri }
}

const { process: database, uri } = await startMongoProcess()
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
const cases: Array<[string, () => InjectOptions]> = [
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

async function timed (request: InjectOptions): Promise<{ ms: number, status: number }> {
  const started = performance.now()
  const answer = await sync.inject(request)
  return { ms: performance.now() - started, status: answer.statusCode }
}

const healthy = new Map<string, { ms: number, status: number }>()
for (const [name, request] of cases) {
  await timed(request())
  healthy.set(name, await timed(request()))
}

database.kill('SIGSTOP')
console.log(`hung Sync database (deadline per call ${DATABASE_CALL_DEADLINE_MS} ms):`)
try {
  for (const [name, request] of cases) {
    const hung = await timed(request())
    const base = healthy.get(name) ?? { ms: 1, status: 0 }
    console.log(`  ${name.padEnd(13)} up: ${base.status} in ${base.ms.toFixed(0)} ms; hung: ${hung.status} in ${hung.ms.toFixed(0)} ms ` +
      `(${(hung.ms / base.ms).toFixed(0)}x the healthy answer, ${(hung.ms / DATABASE_CALL_DEADLINE_MS).toFixed(2)}x the deadline)`)
  }
} finally {
  database.kill('SIGCONT')
  await sync.close()
  database.kill('SIGINT')
}
