import fp from 'fastify-plugin'
import type { Analytics } from '../../lib/analytics.js'
import { createAnalytics } from '../../clients/analytics.js'

declare module 'fastify' {
  interface FastifyInstance {
    analytics: Analytics
  }
}

// The backend's outbound analytics: the connect funnel of its own connect route. The same client
// as the Sync service's; without analytics.key and analytics.host the events are log lines.
export default fp(async function analytics (fastify) {
  const client = await createAnalytics(fastify.config.analytics, fastify.log.child({ component: 'analytics' }))
  fastify.decorate('analytics', client)
  fastify.addHook('onClose', async () => { await client.close() })
}, { name: 'analytics', dependencies: ['config'] })
