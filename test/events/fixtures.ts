// Building blocks for the event tests that run below the HTTP routes: the real event-store and
// outbox plugins in a Fastify instance, on the dev/mongo stand-in (or MONGODB_URI), talking to a
// recording Sync endpoint through the real SyncClient.
import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import { connectMongo } from '../../plugins/external/mongo.js'
import type { Test } from 'tap'
import { startMongo } from '../../dev/mongo/index.js'
import { SyncClient } from '../../clients/sync.js'
import eventStorePlugin from '../../plugins/app/event-store.js'
import outboxPlugin from '../../plugins/app/outbox.js'
import { SYNC_PATHS, type CredentialHandOver, type EventChangeReport } from '../../schemas/sync/index.js'
import type { OutboxEntryKind } from '../../lib/outbox.js'
import { captureLog, testConfig, type CapturedLog } from '../helper.js'

export interface MongoServer {
  uri: (database: string) => string
  replicaSet: boolean
}

export async function startMongoServer (t: Test, options: { replicaSet: boolean }): Promise<MongoServer> {
  const external = process.env.MONGODB_URI
  let base: string
  if (external !== undefined && external !== '') {
    base = external
  } else {
    const server = await startMongo(options.replicaSet ? { replicaSet: 'rs0' } : {})
    t.teardown(() => server.close())
    base = server.uri
  }
  return {
    uri: (database) => {
      const url = new URL(base)
      url.pathname = `/${database}`
      return url.toString()
    },
    replicaSet: options.replicaSet
  }
}

type SyncBehaviour = 'accept' | 'unavailable' | 'maintenance' | 'revoked'

/** A Sync service stand-in for the event-change endpoint that records what it applied. */
export interface RecordingSync {
  url: string
  /** Reports applied, first delivery of each idempotency key only. */
  applied: EventChangeReport[]
  /** Every delivery attempt, duplicates included. */
  attempts: EventChangeReport[]
  /**
   * Every delivery of any kind Sync took, in arrival order: `eventChange:<eventId>`, `watchStop`,
   * `restartSync`, `credentialHandOver:<providerAccountId>`. A repeated idempotency key of a kind
   * that carries one is not taken again, as Sync does.
   */
  deliveries: Array<{ userId: string, what: string }>
  /** Every call of any kind, refused and repeated ones included, with the key it carried (null: the kind carries none). */
  calls: Array<{ userId: string, kind: OutboxEntryKind, idempotencyKey: string | null }>
  behaviour: SyncBehaviour
  close: () => Promise<void>
}

export async function startRecordingSync (t: Test): Promise<RecordingSync> {
  const server = Fastify()
  const state: RecordingSync = { url: '', applied: [], attempts: [], deliveries: [], calls: [], behaviour: 'accept', close: async () => { await server.close() } }
  /** The refusal the current behaviour answers with, or null when the call is taken. */
  async function refusal (reply: FastifyReply): Promise<FastifyReply | null> {
    switch (state.behaviour) {
      case 'unavailable':
        return await reply.code(502).send({ statusCode: 502, code: 'INTERNAL', error: 'Bad Gateway', message: 'down' })
      case 'maintenance':
        return await reply.code(503).send({ statusCode: 503, code: 'MAINTENANCE', error: 'Service Unavailable', message: 'maintenance' })
      case 'revoked':
        return await reply.code(410).send({ statusCode: 410, code: 'CONNECTION_REVOKED', error: 'Gone', message: 'revoked' })
      case 'accept':
        return null
    }
  }
  server.post(SYNC_PATHS.eventChanges, async (request, reply) => {
    const report = request.body as EventChangeReport
    state.attempts.push(report)
    state.calls.push({ userId: report.userId, kind: 'eventChange', idempotencyKey: report.idempotencyKey })
    const refused = await refusal(reply)
    if (refused !== null) return refused
    const duplicate = state.applied.some((applied) => applied.idempotencyKey === report.idempotencyKey)
    if (!duplicate) {
      state.applied.push(report)
      state.deliveries.push({ userId: report.userId, what: `eventChange:${report.eventId}` })
    }
    return { duplicate, providerWriteQueued: report.calendarId !== undefined }
  })
  server.post<{ Params: { userId: string } }>(SYNC_PATHS.stopWatches(':userId'), async (request, reply) => {
    state.calls.push({ userId: request.params.userId, kind: 'watchStop', idempotencyKey: null })
    const refused = await refusal(reply)
    if (refused !== null) return refused
    state.deliveries.push({ userId: request.params.userId, what: 'watchStop' })
    return { stopped: 1 }
  })
  server.post<{ Params: { userId: string } }>(SYNC_PATHS.restartSync(':userId'), async (request, reply) => {
    state.calls.push({ userId: request.params.userId, kind: 'restartSync', idempotencyKey: null })
    const refused = await refusal(reply)
    if (refused !== null) return refused
    state.deliveries.push({ userId: request.params.userId, what: 'restartSync' })
    return await reply.code(202).send({ queued: 1 })
  })
  const handedOverKeys = new Set<string>()
  server.post<{ Params: { userId: string }, Body: CredentialHandOver }>(SYNC_PATHS.credentials(':userId'), async (request, reply) => {
    const { userId } = request.params
    state.calls.push({ userId, kind: 'credentialHandOver', idempotencyKey: request.body.idempotencyKey })
    const refused = await refusal(reply)
    if (refused !== null) return refused
    const key = `${userId}:${request.body.idempotencyKey}`
    const created = !handedOverKeys.has(key)
    if (created) {
      handedOverKeys.add(key)
      state.deliveries.push({ userId, what: `credentialHandOver:${request.body.providerAccountId}` })
    }
    return { connectionId: 'c'.repeat(24), created, queued: created ? 'incremental' : 'none' }
  })
  await server.listen({ port: 0, host: '127.0.0.1' })
  const address = server.server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  state.url = `http://127.0.0.1:${address.port}`
  t.teardown(() => server.close())
  return state
}

export interface EventsInstance {
  app: FastifyInstance
  log: CapturedLog
}

/** The events plugins on a Fastify instance of their own, as app.ts would register them. */
export async function buildEventsInstance (t: Test, options: { mongoUri: string, syncUrl: string, start?: boolean, credentialEncryptionKey?: string }): Promise<EventsInstance> {
  const { stream, log } = captureLog()
  const app = Fastify({ logger: { level: 'debug', stream } })
  await app.register(fp(async (fastify) => {
    const handle = await connectMongo(options.mongoUri)
    fastify.decorate('mongo', handle)
    fastify.addHook('onClose', async () => { await handle.client.close() })
  }, { name: 'mongo' }))
  await app.register(fp(async (fastify) => {
    const client = new SyncClient({ baseUrl: options.syncUrl, internalAuthToken: randomBytes(16).toString('hex'), timeoutMs: 2000 })
    fastify.decorate('syncClient', client)
    fastify.addHook('onClose', async () => { await client.close() })
  }, { name: 'sync-client' }))
  if (options.credentialEncryptionKey !== undefined) {
    // The outbox opens waiting credentials with this key; the rest of the configuration is unused here.
    const databaseUri = (database: string) => Object.assign(new URL(options.mongoUri), { pathname: `/${database}` }).toString()
    const config = testConfig({ mongoUri: options.mongoUri, databaseUri, replicaSet: false, sessionsUri: 'http://127.0.0.1:9', sessionsKey: 'unused-key', stopMongo: async () => {} })
    app.decorate('config', { ...config, sync: { ...config.sync, credentialEncryptionKey: options.credentialEncryptionKey } })
  }
  await app.register(outboxPlugin)
  await app.register(eventStorePlugin)
  if (options.start !== false) await app.ready()
  t.teardown(() => app.close())
  return { app, log }
}

export function databaseName (): string {
  return `events_${randomBytes(4).toString('hex')}`
}
