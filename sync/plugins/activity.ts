import fp from 'fastify-plugin'
import { UserActivityStore } from '../stores/user-activity.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncActivity: UserActivityStore
  }
}

export default fp(async function syncActivity (fastify) {
  fastify.decorate('syncActivity', new UserActivityStore(fastify.syncDb.db))
}, { name: 'sync-activity', dependencies: ['sync-database'] })
