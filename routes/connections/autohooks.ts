import type { FastifyInstance } from 'fastify'

// The user's provider connections: a verified session, checked before the body is read.
export default async function requireSessionForFolder (fastify: FastifyInstance) {
  fastify.addHook('onRequest', fastify.requireSession)
}
