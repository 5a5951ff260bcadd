import fp from 'fastify-plugin'
import { WatchStore } from '../stores/watches.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncWatches: WatchStore
  }
}

export default fp(async function syncWatches (fastify) {
  const watches = new WatchStore(fastify.syncDb.db)
  await watches.ensureIndexes()
  fastify.decorate('syncWatches', watches)
}, { name: 'sync-watches', dependencies: ['sync-database'] })
