import type { FastifyInstance } from 'fastify'

/**
 * How long an event read or write may take before the client is told 503 with Retry-After
 * (Fastify's `handlerTimeout`). The database driver's own deadlines (server selection,
 * connection, socket silence) add up to 5-15 s when the database hangs; a person's request
 * answers within this whatever state the database is in, while the operation ends on its own
 * deadline behind it. Event reads and writes take milliseconds when all is well.
 */
export const EVENT_REQUEST_DEADLINE_MS = 3000

// Every route in this folder needs a verified session (cookie, or bearer token for native
// clients), checked before the body is parsed or validated: without one, nothing else runs.
export default async function requireSessionForFolder (fastify: FastifyInstance) {
  fastify.addHook('onRequest', fastify.requireSession)
  // Each event route answers, or meets a 503 with Retry-After, within the deadline.
  fastify.addHook('onRoute', (route) => { route.handlerTimeout ??= EVENT_REQUEST_DEADLINE_MS })
}
