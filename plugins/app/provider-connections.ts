import fp from 'fastify-plugin'
import { createProviderConnections, type ProviderConnections } from '../../services/provider-connections.js'

declare module 'fastify' {
  interface FastifyInstance {
    providerConnections: ProviderConnections
  }
}

export default fp(async function providerConnections (fastify) {
  fastify.decorate('providerConnections', createProviderConnections(fastify.syncClient))
}, { name: 'provider-connections', dependencies: ['sync-client'] })
