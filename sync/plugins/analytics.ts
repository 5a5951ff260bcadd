import fp from 'fastify-plugin'
import type { Analytics } from '../../lib/analytics.js'
import { createAnalytics } from '../../clients/analytics.js'

declare module 'fastify' {
  interface FastifyInstance {
    syncAnalytics: Analytics
  }
}

export interface SyncAnalyticsOptions {
  /** Used instead of the one the configuration chooses. */
  analytics?: Analytics | undefined
}

export default fp<SyncAnalyticsOptions>(async function syncAnalytics (fastify, options) {
  const analytics = options.analytics ?? await createAnalytics(fastify.syncConfig.analytics, fastify.log.child({ component: 'analytics' }))
  fastify.decorate('syncAnalytics', analytics)
  fastify.addHook('onClose', async () => { await analytics.close() })
}, { name: 'sync-analytics', dependencies: ['sync-config'] })
