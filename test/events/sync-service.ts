// The real Sync service app for end-to-end event tests, listening on 127.0.0.1 so the backend's
// Sync client reaches it over HTTP. It can be stopped and started again on the same port.
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { MongoClient, type Db } from 'mongodb'
import type { Test } from 'tap'
import app from '../../sync/app.js'
import type { SyncConfig } from '../../schemas/config.js'
import { testConfig } from '../sync/helper.js'
import { STARTUP_PLUGIN_DEADLINE_MS } from '../../lib/deadline.js'

export interface SyncService {
  url: string
  internalAuthToken: string
  config: SyncConfig
  /** Starts (again) on the same port; `sync` changes the configuration from then on. */
  start: (sync?: Partial<SyncConfig['sync']>) => Promise<void>
  stop: () => Promise<void>
  /** Reports Sync recorded (one row per idempotency key), oldest first. */
  reports: (userId?: string) => Promise<Array<{ userId: string, idempotencyKey: string }>>
  /** `event` invalidations in the user's change feed. */
  eventInvalidations: (userId: string) => Promise<number>
  /** The Sync service's own database, for setting up connections as Sync stores them. */
  db: Db
}

export async function startSyncService (t: Test, databaseUri: string, sync: Partial<SyncConfig['sync']> = {}): Promise<SyncService> {
  let config = testConfig(databaseUri, { execution: 'passive', ...sync })
  let server: FastifyInstance | undefined
  let port = 0
  const reader = new MongoClient(databaseUri)
  await reader.connect()
  t.teardown(() => reader.close())

  const service: SyncService = {
    url: '',
    internalAuthToken: config.sync.internalAuthToken,
    config,
    start: async (changes) => {
      if (changes !== undefined) config = { ...config, sync: { ...config.sync, ...changes } }
      service.config = config
      const instance = Fastify({ logger: false, forceCloseConnections: true, pluginTimeout: STARTUP_PLUGIN_DEADLINE_MS })
      await instance.register(fp(app), { config, worker: { autoStart: false } })
      await instance.listen({ port, host: '127.0.0.1' })
      const address = instance.server.address()
      if (address === null || typeof address === 'string') throw new Error('Sync has no TCP address')
      port = address.port
      service.url = `http://127.0.0.1:${port}`
      server = instance
    },
    stop: async () => {
      await server?.close()
      server = undefined
    },
    reports: async (userId) => {
      const rows = await reader.db().collection('eventChangeReports').find(userId === undefined ? {} : { userId }).sort({ createdAt: 1 }).toArray()
      return rows.map((row) => ({ userId: String(row.userId), idempotencyKey: String(row.idempotencyKey) }))
    },
    db: reader.db(),
    eventInvalidations: async (userId) => await reader.db().collection('changeFeed').countDocuments({ userId, 'invalidation.kind': 'event' })
  }
  await service.start()
  t.teardown(() => service.stop())
  return service
}
