import { MongoClient, MongoServerError } from 'mongodb'
import type { Collection, Document } from 'mongodb'
import type {
  KeySet, MappingRecord, SessionRecord, Storage, TokenKind, TokenRecord, UserRecord, WriteResult
} from './storage.js'

const DUPLICATE_KEY = 11000
const DEFAULT_DATABASE = 'session_core'

const isDuplicate = (err: unknown): boolean => err instanceof MongoServerError && err.code === DUPLICATE_KEY

type Stored<T> = T & { _id: string }

function strip<T extends object> (doc: Stored<T> | null): T | null {
  if (doc === null) return null
  const { _id: _ignored, ...rest } = doc
  return rest as unknown as T
}

/** The database named in the URI path, or `session_core`. */
function databaseName (uri: string): string {
  const match = /^mongodb(?:\+srv)?:\/\/[^/]+\/([^?]+)/.exec(uri)
  return match?.[1] === undefined ? DEFAULT_DATABASE : decodeURIComponent(match[1])
}

interface VerifiedEmailDoc { _id: string, userId: string, email: string }
interface MetadataDoc { _id: string, metadata: Record<string, unknown> }

export async function createMongoStorage (uri: string): Promise<Storage> {
  const client = new MongoClient(uri)
  await client.connect()
  try {
    const db = client.db(databaseName(uri))
    const keys = db.collection<Stored<KeySet>>('keys')
    const users = db.collection<Stored<UserRecord>>('users')
    const sessions = db.collection<Stored<SessionRecord>>('sessions')
    const tokens = db.collection<Stored<TokenRecord>>('tokens')
    const verified = db.collection<VerifiedEmailDoc>('verified_emails')
    const metadata = db.collection<MetadataDoc>('user_metadata')
    const mappings = db.collection<Stored<MappingRecord>>('userid_mappings')

    await users.createIndex({ uniqueKey: 1 }, { unique: true })
    await users.createIndex({ email: 1 })
    await sessions.createIndex({ userId: 1 })
    await tokens.createIndex({ kind: 1, userId: 1 })
    await verified.createIndex({ userId: 1 })
    await mappings.createIndex({ externalUserId: 1 }, { unique: true })

    const insertUnique = async <T extends Document>(collection: Collection<T>, doc: Parameters<Collection<T>['insertOne']>[0]) => {
      try {
        await collection.insertOne(doc)
        return 'ok' as const
      } catch (err) {
        if (isDuplicate(err)) return 'duplicate' as const
        throw err
      }
    }
    const verifiedId = (userId: string, email: string) => JSON.stringify([userId, email])
    const tokenId = (kind: TokenKind, hash: string) => `${kind}:${hash}`

    return {
      async keysOrCreate (create) {
        const existing = await keys.findOne({ _id: 'keys' })
        if (existing !== null) return strip(existing) as KeySet
        // Two processes starting together race here; the unique _id picks one winner for both.
        await insertUnique(keys, { _id: 'keys', ...create() })
        const stored = await keys.findOne({ _id: 'keys' })
        if (stored === null) throw new Error('signing keys missing right after being stored')
        return strip(stored) as KeySet
      },

      insertUser: async (user) => insertUnique(users, { _id: user.id, ...user }),
      getUser: async (id) => strip(await users.findOne({ _id: id })),
      getUserByUniqueKey: async (uniqueKey) => strip(await users.findOne({ uniqueKey })),
      getUsersByEmail: async (email) => (await users.find({ email }).toArray()).map((u) => strip(u) as UserRecord),
      getUsersByThirdParty: async (id, userId) =>
        (await users.find({ 'thirdParty.id': id, 'thirdParty.userId': userId }).toArray()).map((u) => strip(u) as UserRecord),
      async updateUser (id, set): Promise<WriteResult> {
        try {
          const result = await users.updateOne({ _id: id }, { $set: set })
          return result.matchedCount === 0 ? 'missing' : 'ok'
        } catch (err) {
          if (isDuplicate(err)) return 'duplicate'
          throw err
        }
      },
      deleteUser: async (id) => (await users.deleteOne({ _id: id })).deletedCount === 1,

      async insertSession (session) {
        await sessions.insertOne({ _id: session.handle, ...session })
      },
      getSession: async (handle) => strip(await sessions.findOne({ _id: handle })),
      async swapRefreshHash (handle, expectedHash2, newHash2, expiry) {
        const result = await sessions.updateOne(
          { _id: handle, refreshTokenHash2: expectedHash2 },
          { $set: { refreshTokenHash2: newHash2, expiry } }
        )
        return result.matchedCount === 1
      },
      updateSession: async (handle, set) => (await sessions.updateOne({ _id: handle }, { $set: set })).matchedCount === 1,
      async deleteSessions (handles) {
        const found = await sessions.find({ _id: { $in: handles } }).toArray()
        const deleted: string[] = []
        for (const session of found) {
          if ((await sessions.deleteOne({ _id: session._id })).deletedCount === 1) deleted.push(session._id)
        }
        return deleted
      },
      async sessionHandlesOfUsers (userIds, tenantId) {
        const filter = tenantId === undefined ? { userId: { $in: userIds } } : { userId: { $in: userIds }, tenantId }
        return (await sessions.find(filter).toArray()).map((s) => s._id)
      },

      async insertToken (token) {
        await tokens.insertOne({ _id: tokenId(token.kind, token.tokenHash), ...token })
      },
      takeToken: async (kind, hash) => strip(await tokens.findOneAndDelete({ _id: tokenId(kind, hash) })),
      async deleteTokens (kind, userId, email) {
        await tokens.deleteMany(email === undefined ? { kind, userId } : { kind, userId, email })
      },

      async setEmailVerified (userId, email, isVerified) {
        if (!isVerified) {
          await verified.deleteOne({ _id: verifiedId(userId, email) })
          return
        }
        await insertUnique(verified, { _id: verifiedId(userId, email), userId, email })
      },
      isEmailVerified: async (userId, email) => (await verified.findOne({ _id: verifiedId(userId, email) })) !== null,
      hasVerifiedEmails: async (userId) => (await verified.findOne({ userId })) !== null,
      async deleteVerifiedEmails (userId) {
        await verified.deleteMany({ userId })
      },

      getMetadata: async (userId) => (await metadata.findOne({ _id: userId }))?.metadata ?? null,
      async setMetadata (userId, value) {
        await metadata.replaceOne({ _id: userId }, { metadata: value }, { upsert: true })
      },
      deleteMetadata: async (userId) => (await metadata.deleteOne({ _id: userId })).deletedCount === 1,

      insertMapping: async (mapping) => insertUnique(mappings, { _id: mapping.superTokensUserId, ...mapping }),
      getMappingBySuperTokensId: async (id) => strip(await mappings.findOne({ _id: id })),
      getMappingByExternalId: async (id) => strip(await mappings.findOne({ externalUserId: id })),
      deleteMapping: async (id) => (await mappings.deleteOne({ _id: id })).deletedCount === 1,
      async setMappingInfo (id, info) {
        const update = info === undefined ? { $unset: { externalUserIdInfo: '' as const } } : { $set: { externalUserIdInfo: info } }
        return (await mappings.updateOne({ _id: id }, update)).matchedCount === 1
      },

      async purgeExpired (now) {
        await sessions.deleteMany({ expiry: { $lt: now } })
        await tokens.deleteMany({ expiry: { $lt: now } })
      },

      async close () {
        await client.close()
      }
    }
  } catch (err) {
    await client.close()
    throw err
  }
}
