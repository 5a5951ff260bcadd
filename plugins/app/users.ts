import fp from 'fastify-plugin'
import { ObjectId, type Collection } from 'mongodb'
import { normalizeEmail, userUpsertFor, type AuthenticationFacts } from '../../lib/identity.js'

export interface UserDocument {
  _id: ObjectId
  email: string
  name?: string
  signedUpAt: Date
  lastLoggedInAt: Date
  google?: { googleId: string, gRefreshToken?: string }
  microsoft?: { microsoftId: string }
}

export interface UserStore {
  findById: (userId: string) => Promise<UserDocument | null>
  findIdByEmail: (email: string) => Promise<string | undefined>
  recordAuthentication: (userId: string, facts: AuthenticationFacts) => Promise<UserDocument>
}

declare module 'fastify' {
  interface FastifyInstance {
    users: UserStore
  }
}

export function createUserStore (collection: Collection<UserDocument>): UserStore {
  return {
    async findById (userId) {
      return ObjectId.isValid(userId) ? await collection.findOne({ _id: new ObjectId(userId) }) : null
    },
    async findIdByEmail (email) {
      const user = await collection.findOne({ email: normalizeEmail(email) }, { projection: { _id: 1 } })
      return user?._id.toHexString()
    },
    async recordAuthentication (userId, facts) {
      const user = await collection.findOneAndUpdate(
        { _id: new ObjectId(userId) },
        userUpsertFor(facts),
        { upsert: true, returnDocument: 'after' }
      )
      if (user === null) throw new Error('user upsert returned no document')
      return user
    }
  }
}

// User records live in the backend's database; the session library holds identity only.
export default fp(async function users (fastify) {
  const collection = fastify.mongo.db.collection<UserDocument>('users')
  await collection.createIndexes([
    { key: { email: 1 }, name: 'email_unique', unique: true },
    // One owner per provider account.
    { key: { 'google.googleId': 1 }, name: 'google_account_unique', unique: true, sparse: true },
    { key: { 'microsoft.microsoftId': 1 }, name: 'microsoft_account_unique', unique: true, sparse: true }
  ])
  fastify.decorate('users', createUserStore(collection))
}, { name: 'users', dependencies: ['mongo'] })
