import fp from 'fastify-plugin'
import { EventStore } from '../../stores/events.js'

declare module 'fastify' {
  interface FastifyInstance {
    eventStore: EventStore
  }
}

export default fp(async function eventStore (fastify) {
  const store = new EventStore(fastify.mongo, fastify.outbox)
  await store.ensureIndexes()
  fastify.decorate('eventStore', store)
}, { name: 'event-store', dependencies: ['mongo', 'outbox'] })
