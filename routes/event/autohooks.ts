import type { FastifyInstance } from 'fastify'

// Every route in this folder needs a verified session (cookie, or bearer token for native clients).
export default async function requireSessionForFolder (fastify: FastifyInstance) {
  fastify.addHook('preHandler', fastify.requireSession)
}
