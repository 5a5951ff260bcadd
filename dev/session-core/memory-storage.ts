import type {
  KeySet, MappingRecord, SessionRecord, Storage, TokenKind, TokenRecord, UserRecord, WriteResult
} from './storage.js'

// Records are copied in and out so callers can never mutate stored state by accident,
// which is what a database round trip guarantees too.
const copy = <T>(value: T): T => structuredClone(value)

export function createMemoryStorage (): Storage {
  let keys: KeySet | null = null
  const users = new Map<string, UserRecord>()
  const sessions = new Map<string, SessionRecord>()
  const tokens = new Map<string, TokenRecord>()
  const verified = new Set<string>()
  const metadata = new Map<string, Record<string, unknown>>()
  const mappings = new Map<string, MappingRecord>()

  const verifiedKey = (userId: string, email: string) => JSON.stringify([userId, email])
  const tokenKey = (kind: TokenKind, hash: string) => `${kind}:${hash}`
  const uniqueKeyTaken = (uniqueKey: string, exceptId?: string) =>
    [...users.values()].some((u) => u.uniqueKey === uniqueKey && u.id !== exceptId)

  return {
    async keysOrCreate (create) {
      keys ??= create()
      return copy(keys)
    },

    async insertUser (user) {
      if (users.has(user.id) || uniqueKeyTaken(user.uniqueKey)) return 'duplicate'
      users.set(user.id, copy(user))
      return 'ok'
    },
    async getUser (id) {
      const user = users.get(id)
      return user === undefined ? null : copy(user)
    },
    async getUserByUniqueKey (uniqueKey) {
      const user = [...users.values()].find((u) => u.uniqueKey === uniqueKey)
      return user === undefined ? null : copy(user)
    },
    async getUsersByEmail (email) {
      return [...users.values()].filter((u) => u.email === email).map(copy)
    },
    async getUsersByThirdParty (thirdPartyId, thirdPartyUserId) {
      return [...users.values()]
        .filter((u) => u.thirdParty?.id === thirdPartyId && u.thirdParty.userId === thirdPartyUserId)
        .map(copy)
    },
    async updateUser (id, set): Promise<WriteResult> {
      const user = users.get(id)
      if (user === undefined) return 'missing'
      if (set.uniqueKey !== undefined && uniqueKeyTaken(set.uniqueKey, id)) return 'duplicate'
      users.set(id, { ...user, ...copy(set) })
      return 'ok'
    },
    async deleteUser (id) {
      return users.delete(id)
    },

    async insertSession (session) {
      sessions.set(session.handle, copy(session))
    },
    async getSession (handle) {
      const session = sessions.get(handle)
      return session === undefined ? null : copy(session)
    },
    async swapRefreshHash (handle, expectedHash2, newHash2, expiry) {
      const session = sessions.get(handle)
      if (session === undefined || session.refreshTokenHash2 !== expectedHash2) return false
      sessions.set(handle, { ...session, refreshTokenHash2: newHash2, expiry })
      return true
    },
    async updateSession (handle, set) {
      const session = sessions.get(handle)
      if (session === undefined) return false
      sessions.set(handle, { ...session, ...copy(set) })
      return true
    },
    async deleteSessions (handles) {
      return handles.filter((handle) => sessions.delete(handle))
    },
    async sessionHandlesOfUsers (userIds, tenantId) {
      return [...sessions.values()]
        .filter((s) => userIds.includes(s.userId) && (tenantId === undefined || s.tenantId === tenantId))
        .map((s) => s.handle)
    },

    async insertToken (token) {
      tokens.set(tokenKey(token.kind, token.tokenHash), copy(token))
    },
    async takeToken (kind, tokenHash) {
      const key = tokenKey(kind, tokenHash)
      const token = tokens.get(key)
      if (token === undefined) return null
      tokens.delete(key)
      return token
    },
    async deleteTokens (kind, userId, email) {
      for (const [key, token] of tokens) {
        if (token.kind === kind && token.userId === userId && (email === undefined || token.email === email)) {
          tokens.delete(key)
        }
      }
    },

    async setEmailVerified (userId, email, isVerified) {
      if (isVerified) verified.add(verifiedKey(userId, email))
      else verified.delete(verifiedKey(userId, email))
    },
    async isEmailVerified (userId, email) {
      return verified.has(verifiedKey(userId, email))
    },
    async hasVerifiedEmails (userId) {
      return [...verified].some((key) => (JSON.parse(key) as [string, string])[0] === userId)
    },
    async deleteVerifiedEmails (userId) {
      for (const key of verified) {
        if ((JSON.parse(key) as [string, string])[0] === userId) verified.delete(key)
      }
    },

    async getMetadata (userId) {
      const value = metadata.get(userId)
      return value === undefined ? null : copy(value)
    },
    async setMetadata (userId, value) {
      metadata.set(userId, copy(value))
    },
    async deleteMetadata (userId) {
      return metadata.delete(userId)
    },

    async insertMapping (mapping) {
      const taken = [...mappings.values()].some((m) =>
        m.superTokensUserId === mapping.superTokensUserId || m.externalUserId === mapping.externalUserId)
      if (taken) return 'duplicate'
      mappings.set(mapping.superTokensUserId, copy(mapping))
      return 'ok'
    },
    async getMappingBySuperTokensId (id) {
      const mapping = mappings.get(id)
      return mapping === undefined ? null : copy(mapping)
    },
    async getMappingByExternalId (id) {
      const mapping = [...mappings.values()].find((m) => m.externalUserId === id)
      return mapping === undefined ? null : copy(mapping)
    },
    async deleteMapping (superTokensUserId) {
      return mappings.delete(superTokensUserId)
    },
    async setMappingInfo (superTokensUserId, info) {
      const mapping = mappings.get(superTokensUserId)
      if (mapping === undefined) return false
      const updated: MappingRecord = { superTokensUserId, externalUserId: mapping.externalUserId }
      if (info !== undefined) updated.externalUserIdInfo = info
      mappings.set(superTokensUserId, updated)
      return true
    },

    async purgeExpired (now) {
      for (const [handle, session] of sessions) if (session.expiry < now) sessions.delete(handle)
      for (const [key, token] of tokens) if (token.expiry < now) tokens.delete(key)
    },

    async close () {}
  }
}
