import fp from 'fastify-plugin'
import { isRealValue } from '../../lib/config-rules.js'
import { LogAnalytics, PostHogAnalytics, type Analytics } from '../../lib/analytics.js'

declare module 'fastify' {
  interface FastifyInstance {
    analytics: Analytics
  }
}

// The backend's outbound analytics: the connect funnel of its own connect route. The same client
// as the Sync service's; without analytics.key and analytics.host the events are log lines.
export default fp(async function analytics (fastify) {
  const log = fastify.log.child({ component: 'analytics' })
  const { key, host } = fastify.config.analytics ?? {}
  const client: Analytics = isRealValue(key) && isRealValue(host) ? new PostHogAnalytics({ key, host }, log) : new LogAnalytics(log)
  fastify.decorate('analytics', client)
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'analytics', dependencies: ['config'] })
