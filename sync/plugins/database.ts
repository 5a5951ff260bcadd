import fp from 'fastify-plugin'
import { MongoClient } from 'mongodb'
import type { Db } from 'mongodb'
import { checkIsolation, proveLeastPrivilege } from '../lib/isolation.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncDb: { client: MongoClient, db: Db }
  }
}

// The Sync service's own database (sync.databaseUri); it is never the API database.
export default fp(async function syncDatabase (fastify) {
  const config = fastify.syncConfig
  checkIsolation(config)
  const client = new MongoClient(config.sync.databaseUri, { appName: 'calendar-sync', serverSelectionTimeoutMS: 5000 })
  await client.connect()
  try {
    if (config.sync.enforceLeastPrivilege === true) await proveLeastPrivilege(client, config)
  } catch (error) {
    await client.close()
    throw error
  }
  fastify.decorate('syncDb', { client, db: client.db() })
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'sync-database', dependencies: ['sync-config'] })
