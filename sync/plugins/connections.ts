import fp from 'fastify-plugin'
import { ConnectionStore } from '../stores/connections.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncConnections: ConnectionStore
  }
}

export default fp(async function syncConnections (fastify) {
  const connections = new ConnectionStore(fastify.syncDb.db, fastify.syncFeed, fastify.syncCredentials, fastify.syncClock)
  await connections.ensureIndexes()
  fastify.decorate('syncConnections', connections)
}, { name: 'sync-connections', dependencies: ['sync-config', 'sync-database', 'sync-change-feed', 'sync-credentials'] })
