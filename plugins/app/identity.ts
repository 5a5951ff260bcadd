import fp from 'fastify-plugin'
import { createIdentity, type Identity } from '../../services/identity.js'

declare module 'fastify' {
  interface FastifyInstance {
    identity: Identity
  }
}

export default fp(async function identity (fastify) {
  fastify.decorate('identity', createIdentity(fastify, fastify.log))
}, { name: 'identity', dependencies: ['users', 'credentials'] })
