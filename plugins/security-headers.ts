import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'

// A JSON and SSE API: no documents to frame or scripts to run, so the strictest policy fits.
export default fp(async function securityHeaders (fastify) {
  await fastify.register(helmet, {
    contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'same-site' }
  })
}, { name: 'security-headers' })
