import fp from 'fastify-plugin'
import { createCredentials, type Credentials } from '../../services/credentials.js'

declare module 'fastify' {
  interface FastifyInstance {
    credentials: Credentials
  }
}

export default fp(async function credentials (fastify) {
  fastify.decorate('credentials', createCredentials(fastify.config.sync.credentialEncryptionKey, fastify.log))
}, { name: 'credentials', dependencies: ['config'] })
