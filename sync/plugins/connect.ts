import fp from 'fastify-plugin'
import { ConnectFlow } from '../services/connect-flow.js'
import { OAuthAttemptStore } from '../stores/oauth-attempts.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncConnect: ConnectFlow
  }
}

export default fp(async function syncConnect (fastify) {
  const attempts = new OAuthAttemptStore(fastify.syncDb.db)
  await attempts.ensureIndexes()
  fastify.decorate('syncConnect', new ConnectFlow({
    engine: fastify.syncEngine,
    backend: fastify.syncBackend,
    providers: fastify.syncProviders,
    attempts,
    credentials: fastify.syncCredentials,
    connections: fastify.syncConnections,
    analytics: fastify.syncAnalytics,
    settings: fastify.syncConfig.sync,
    clock: fastify.syncClock,
    log: fastify.log.child({ component: 'sync' })
  }))
}, {
  name: 'sync-connect',
  dependencies: ['sync-config', 'sync-database', 'sync-providers', 'sync-credentials', 'sync-connections', 'sync-analytics', 'sync-engine', 'sync-backend']
})
