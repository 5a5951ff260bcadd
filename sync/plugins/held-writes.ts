import fp from 'fastify-plugin'
import { HeldWriteStore } from '../stores/held-writes.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncHeldWrites: HeldWriteStore
  }
}

export default fp(async function syncHeldWrites (fastify) {
  const held = new HeldWriteStore(fastify.syncDb.db)
  await held.ensureIndexes()
  fastify.decorate('syncHeldWrites', held)
}, { name: 'sync-held-writes', dependencies: ['sync-database'] })
