import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HealthResponse, LivenessResponse, ReadinessResponse } from '../../schemas/health.js'
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

  // For load balancers and Kubernetes probes: alive (restart it when not) apart from ready (send
  // it requests only when so). Neither is shed under load; readiness says the load instead.
  fastify.get('/live', {
    schema: {
      description: 'Liveness probe: the process answers. Checks nothing else, so a dependency that is down never gets the process restarted',
      tags: ['health'],
      security: SECURITY.none,
      response: { 200: LivenessResponse }
    }
  }, async () => ({ status: 'ok' as const, timestamp: new Date().toISOString() }))

  fastify.get('/ready', {
    schema: {
      description: 'Readiness probe: 200 when the database and the session core answer and the process is not shedding load, else 503 with the checks that failed',
      tags: ['health'],
      security: SECURITY.none,
      response: { 200: ReadinessResponse, 503: { ...ReadinessResponse, description: 'Not ready: see checks' } }
    }
  }, async (_request, reply) => {
    const { ready, checks } = await fastify.readiness.check()
    return await reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' as const : 'error' as const, timestamp: new Date().toISOString(), checks })
  })
}

export default health
