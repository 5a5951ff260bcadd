import fp from 'fastify-plugin'
import { createProviderAuth, type ProviderAuth } from '../../services/provider-auth.js'

declare module 'fastify' {
  interface FastifyInstance {
    providerAuth: ProviderAuth
  }
}

export default fp(async function providerAuth (fastify) {
  const log = fastify.log.child({ component: 'provider-auth' })
  const auth = createProviderAuth(fastify, log)
  // Users with an open stream hear of a revoked grant through the change feed; Sync also tells
  // the backend directly (POST /api/internal/grant-revoked), which covers everyone else.
  fastify.changeFeed.onConnectionRevoked((userId, connectionId, provider) => {
    auth.grantRevoked({ userId, provider, connectionId, source: 'changeFeed' })
      .catch((error: unknown) => { log.error({ err: error, connectionId }, 'revoking the sessions of a revoked grant failed') })
  })
  fastify.decorate('providerAuth', auth)
}, {
  name: 'provider-auth',
  dependencies: ['config', 'mongo', 'users', 'identity', 'credentials', 'outbox', 'sync-client', 'sse-broker', 'session-revocations', 'change-feed', 'analytics']
})
