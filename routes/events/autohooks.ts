import type { FastifyInstance } from 'fastify'

// The stream needs a verified session (cookie, or bearer token for native clients) that the
// session core still knows: a stream lives for minutes, so a signed-out token must not open one.
export default async function requireSessionForFolder (fastify: FastifyInstance) {
  fastify.addHook('onRequest', fastify.requireLiveSession)
}
