import type { FastifyInstance } from 'fastify'

export default async function userRoutesNeedASession (fastify: FastifyInstance) {
  fastify.addHook('preHandler', fastify.requireSession)
}
