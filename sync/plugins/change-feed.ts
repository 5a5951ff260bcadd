import fp from 'fastify-plugin'
import { ChangeFeed } from '../stores/change-feed.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncFeed: ChangeFeed
  }
}

export default fp(async function syncChangeFeed (fastify) {
  const feed = new ChangeFeed(fastify.syncDb.db, fastify.syncClock, fastify.syncDb.withTransaction)
  await feed.ensureIndexes()
  fastify.decorate('syncFeed', feed)
}, { name: 'sync-change-feed', dependencies: ['sync-config', 'sync-database'] })
