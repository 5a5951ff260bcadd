import type { FastifyInstance } from 'fastify'

// Every route in this folder needs a verified session (cookie, or bearer token for native
// clients), checked before the body is parsed or validated: without one, nothing else runs.
export default async function requireSessionForFolder (fastify: FastifyInstance) {
  fastify.addHook('onRequest', fastify.requireSession)
  // Each event route answers, or meets a 503 with Retry-After, within the deadline
  // (EVENT_REQUEST_DEADLINE_MS unless the app was given another).
  fastify.addHook('onRoute', (route) => { route.handlerTimeout ??= fastify.eventRequestDeadlineMs })
}
