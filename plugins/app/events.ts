import fp from 'fastify-plugin'
import { EventService } from '../../services/events.js'

declare module 'fastify' {
  interface FastifyInstance {
    events: EventService
  }
}

export default fp(async function events (fastify) {
  fastify.decorate('events', new EventService({
    eventStore: fastify.eventStore,
    users: fastify.users,
    outbox: fastify.outbox,
    syncClient: fastify.syncClient
  }))
}, { name: 'events', dependencies: ['event-store', 'outbox', 'users', 'sync-client'] })
