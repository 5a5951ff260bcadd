import fp from 'fastify-plugin'
import { WrittenVersionStore } from '../stores/written-versions.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncWrittenVersions: WrittenVersionStore
  }
}

export default fp(async function syncWrittenVersions (fastify) {
  const written = new WrittenVersionStore(fastify.syncDb.db)
  await written.ensureIndexes()
  fastify.decorate('syncWrittenVersions', written)
}, { name: 'sync-written-versions', dependencies: ['sync-database'] })
