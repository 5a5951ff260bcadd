// What the backend benches write through: a MongoDB stand-in (a replica set, for transactions), a
// session core stand-in and a passive Sync service that takes the outbox's reports, in this process.
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import syncApp from '../sync/app.js'
import type { SyncConfig } from '../schemas/config.js'
import { startMongo } from '../dev/mongo/index.js'
import { startSessionCore } from '../dev/session-core/index.js'

export const SESSION_CORE_KEY = 'bench-session-core-api-key'
export const INTERNAL_AUTH_TOKEN = 'bench-internal-auth-token-0123456789'

export interface BenchDependencies {
  /** The URI of one database of the stand-in. */
  withDatabase: (name: string) => string
  coreUri: string
  sync: FastifyInstance
  syncUrl: string
  close: () => Promise<void>
}

/** A passive Sync service's configuration over `databaseUri`: it takes reports and serves its feed, and calls no provider. */
export function benchSyncConfig (databaseUri: string): SyncConfig {
  return {
    runtime: { version: 'latest', nodeEnv: 'test', timezone: 'UTC', logLevel: 'error' },
    sync: {
      port: 3010,
      databaseUri,
      internalAuthToken: INTERNAL_AUTH_TOKEN,
      callbackBaseUrl: 'http://localhost:3010',
      postConnectRedirectUrl: 'http://localhost:9080',
      serviceUrl: 'http://127.0.0.1:3010',
      cloudMutationMode: 'enabled',
      execution: 'passive'
    }
  }
}

export async function startBenchDependencies (): Promise<BenchDependencies> {
  const mongo = await startMongo({ replicaSet: 'rs0' })
  const core = await startSessionCore({ apiKey: SESSION_CORE_KEY })
  const withDatabase = (name: string): string => {
    const url = new URL(mongo.uri)
    url.pathname = `/${name}`
    return url.toString()
  }
  const sync = Fastify({ logger: { level: 'error' }, forceCloseConnections: true })
  await sync.register(fp(syncApp), { config: benchSyncConfig(withDatabase('sync_bench')), worker: { autoStart: false } })
  await sync.listen({ port: 0, host: '127.0.0.1' })
  return {
    withDatabase,
    coreUri: core.uri,
    sync,
    syncUrl: `http://127.0.0.1:${(sync.server.address() as AddressInfo).port}`,
    close: async () => {
      await sync.close()
      await core.close()
      await mongo.close()
    }
  }
}
