import fp from 'fastify-plugin'
import { coreProbe } from '../../clients/session-core.js'
import { createReadiness, type Readiness } from '../../services/readiness.js'

declare module 'fastify' {
  interface FastifyInstance {
    readiness: { check: () => Promise<Readiness> }
  }
}

/** Probes are called every few seconds; each check answers within this, whatever is down. */
const PROBE_DEADLINE_MS = 1000

export default fp(async function readiness (fastify) {
  const sessionCore = coreProbe(fastify.config.sessions.uri, PROBE_DEADLINE_MS)
  fastify.decorate('readiness', createReadiness({
    database: async () => await fastify.mongo.ping(PROBE_DEADLINE_MS),
    sessionCore,
    // The load-shedding plugin comes later in the request order; it is there by the first probe.
    overloaded: () => fastify.isUnderPressure()
  }))
}, { name: 'readiness', dependencies: ['config', 'mongo'] })
