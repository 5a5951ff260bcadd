import fp from 'fastify-plugin'
import { CredentialHandOverStore } from '../stores/credential-hand-overs.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncCredentialHandOvers: CredentialHandOverStore
  }
}

export default fp(async function syncCredentialHandOvers (fastify) {
  const handOvers = new CredentialHandOverStore(fastify.syncDb.db)
  await handOvers.ensureIndexes()
  fastify.decorate('syncCredentialHandOvers', handOvers)
}, { name: 'sync-credential-hand-overs', dependencies: ['sync-database'] })
