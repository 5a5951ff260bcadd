import fp from 'fastify-plugin'
import { CredentialStore } from '../stores/credentials.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncCredentials: CredentialStore
  }
}

export default fp(async function syncCredentials (fastify) {
  const { credentialEncryptionKey } = fastify.syncConfig.sync
  fastify.decorate('syncCredentials', new CredentialStore(fastify.syncDb.db, fastify.syncClock, credentialEncryptionKey))
}, { name: 'sync-credentials', dependencies: ['sync-config', 'sync-database'] })
