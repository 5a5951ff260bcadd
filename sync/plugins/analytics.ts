import fp from 'fastify-plugin'
import { isRealValue } from '../../lib/config-rules.js'
import { LogAnalytics, PostHogAnalytics } from '../../lib/analytics.js'
import type { Analytics } from '../../lib/analytics.js'

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
  const configured = isRealValue(key) && isRealValue(host) ? new PostHogAnalytics({ key, host }, log) : undefined
  const analytics = options.analytics ?? configured ?? new LogAnalytics(log)
  fastify.decorate('syncAnalytics', analytics)
  fastify.addHook('onClose', async () => { await analytics.close() })
}, { name: 'sync-analytics', dependencies: ['sync-config'] })
