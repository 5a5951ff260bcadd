import type { FastifyInstance } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route needs a session the session core still knows, not only a valid token. */
    liveSession?: boolean
  }
}

// Every route here needs a verified session (cookie, or bearer token for native clients). The
// stream lives for minutes, so a signed-out token must not open one: it asks the session core
// too. A search is a read like any other, checked locally.
export default async function requireSessionForFolder (fastify: FastifyInstance) {
  fastify.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.liveSession === true) await fastify.requireLiveSession(request, reply)
    else await fastify.requireSession(request, reply)
  })
}
