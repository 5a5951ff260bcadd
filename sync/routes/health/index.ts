import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SyncHealthSchema } from '../../../schemas/sync/index.js'

const health: FastifyPluginAsyncTypebox = async (fastify) => {
  // Probes arrive every few seconds; they appear in the log only at debug (runtime.logLevel).
  const logLevel = fastify.syncConfig.runtime.logLevel === 'debug' ? 'debug' : 'silent'

  fastify.get('/live', {
    logLevel,
    schema: { description: 'The process answers', response: { 200: SyncHealthSchema } }
  }, async () => ({ status: 'ok' as const, timestamp: fastify.syncClock.now().toISOString() }))

  fastify.get('/ready', {
    logLevel,
    schema: { description: 'The Sync database answers a ping', response: { 200: SyncHealthSchema, 503: SyncHealthSchema } }
  }, async (_request, reply) => {
    const timestamp = fastify.syncClock.now().toISOString()
    try {
      await fastify.syncDb.ping()
      return { status: 'ok' as const, timestamp }
    } catch {
      return reply.code(503).send({ status: 'error' as const, timestamp })
    }
  })
}

export default health
