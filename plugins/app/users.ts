import fp from 'fastify-plugin'
import { createUserStore, ensureUserIndexes, type UserDocument, type UserStore } from '../../stores/users.js'

declare module 'fastify' {
  interface FastifyInstance {
    users: UserStore
  }
}

// User records live in the backend's database; the session library holds identity only.
export default fp(async function users (fastify) {
  const collection = fastify.mongo.db.collection<UserDocument>('users')
  await ensureUserIndexes(collection)
  fastify.decorate('users', createUserStore(collection, { markForEmailEnrollment: fastify.config.email !== undefined }))
}, { name: 'users', dependencies: ['config', 'mongo'] })
