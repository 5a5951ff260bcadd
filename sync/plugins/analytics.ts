import fp from 'fastify-plugin'
import { isRealValue } from '../../lib/config-rules.js'
import { LogAnalytics } from '../services/analytics.js'
import type { Analytics } from '../services/analytics.js'

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
  const log = fastify.log.child({ component: 'analytics' })
  const { key, host } = fastify.syncConfig.analytics ?? {}
  if (options.analytics === undefined && isRealValue(key) && isRealValue(host)) {
    // No analytics client library is installed yet: the events stay log lines until one is.
    log.warn('analytics.key and analytics.host are set, but the Sync service has no analytics client; oauth_callback events are logged')
  }
  const analytics = options.analytics ?? new LogAnalytics(log)
  fastify.decorate('syncAnalytics', analytics)
  fastify.addHook('onClose', async () => { await analytics.close() })
}, { name: 'sync-analytics', dependencies: ['sync-config'] })
