import fp from 'fastify-plugin'
import { createProviderEvents, type ProviderEvents } from '../../services/provider-events.js'

declare module 'fastify' {
  interface FastifyInstance {
    providerEvents: ProviderEvents
  }
}

export default fp(async function providerEvents (fastify) {
  fastify.decorate('providerEvents', createProviderEvents(fastify.eventStore, fastify.users))
}, { name: 'provider-events', dependencies: ['event-store', 'users'] })
