import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HealthResponse } from '../../schemas/health.js'
import { SECURITY } from '../../schemas/responses.js'

// Load balancers call this often and expect an answer well within their own timeout.
const PING_DEADLINE_MS = 1000

const health: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/', {
    schema: {
      description: 'Unauthenticated uptime probe; checks database reachability only',
      tags: ['health'],
      security: SECURITY.none,
      response: { 200: HealthResponse, 500: { ...HealthResponse, description: 'The database did not answer a ping within 1 s' } }
    }
  }, async (request, reply) => {
    if (await fastify.mongo.ping(PING_DEADLINE_MS)) return { status: 'ok' as const, timestamp: new Date().toISOString() }
    request.log.warn({ deadlineMs: PING_DEADLINE_MS }, 'health check: database ping failed')
    return await reply.code(500).send({ status: 'error' as const, timestamp: new Date().toISOString() })
  })
}

export default health
