import fp from 'fastify-plugin'
import { SyncClient } from '../../clients/sync.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncClient: SyncClient
  }
}

// One keep-alive pool to the Sync service per backend process, closed with the server.
export default fp(async function syncClient (fastify) {
  const client = new SyncClient({
    baseUrl: fastify.config.sync.serviceUrl,
    internalAuthToken: fastify.config.sync.internalAuthToken
  })
  fastify.decorate('syncClient', client)
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'sync-client', dependencies: ['config'] })
