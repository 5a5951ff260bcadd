// The users collection: one record per person, its indexes, and the lookups every sign-in and
// connect needs.
import { ObjectId, type ClientSession, type Collection } from 'mongodb'
import {
  IDENTITY_PROVIDERS, normalizeEmail, PROVIDER_ACCOUNT_FIELD, userUpsertFor, type AuthenticationFacts, type IdentityProvider, type KnownUser,
  type ProviderPayload
} from '../lib/identity.js'
import { withDatabaseDeadline } from './database.js'
import type { UserPreferences } from '../schemas/preferences.js'

export interface UserDocument {
  _id: ObjectId
  email: string
  /** Some login proved control of `email`; at most one record per email has it (a unique index). */
  emailVerified?: boolean
  name?: string
  signedUpAt: Date
  lastLoggedInAt: Date
  /** `gRefreshToken` is sealed with sync.credentialEncryptionKey (lib/credential-cipher.ts). */
  google?: { googleId: string, gRefreshToken?: string }
  microsoft?: { microsoftId: string }
  apple?: { appleId: string }
  /** Provider connections the Sync service has named for this user (lib/provider-connection.ts). */
  providerConnections?: string[]
  /**
   * Set by the write that creates the record while the email block is on, and removed once the
   * user's welcome sequence exists: a process that stops in between leaves it for the email
   * poller's sweep, so no sign-up is left without a sequence.
   */
  emailEnrollmentPending?: true
  /** Calendars the user hid in the list beside the grid (keys as GET /api/calendars/hidden names them). */
  hiddenCalendars?: string[]
  /** Display preferences and calendar colours (GET /api/user/preferences); absent until first chosen. */
  preferences?: UserPreferences
}

/** Called after a write that created a user record (awaited; a listener handles its own errors). */
type SignUpListener = (user: UserDocument) => Promise<void>

/** What a user has proven to hold: an email address (verified) and provider accounts (signed in to). */
export interface ProvenIdentities {
  userId: string
  verifiedEmail?: string
  providerAccounts: Array<{ provider: IdentityProvider, accountId: string }>
}

/** Called after a user proved an identity (awaited: its failure fails the step that proved it). */
type ProvenListener = (proven: ProvenIdentities) => Promise<void>

export interface UserStoreOptions {
  /** Mark new records for the email block's enrollment (only while the block is on). */
  markForEmailEnrollment?: boolean
}

export interface UserStore {
  findById: (userId: string) => Promise<UserDocument | null>
  /** The user that owns the email: the one that proved it, else the oldest. */
  findEmailOwner: (email: string) => Promise<UserDocument | null>
  /** The one user that holds this provider account. */
  findByProviderAccount: (provider: IdentityProvider, accountId: string) => Promise<UserDocument | null>
  /**
   * Records an authentication (creating the record when needed). Rejects with a duplicate-key
   * error when the provider account or the verified email belongs to another user meanwhile.
   */
  recordAuthentication: (userId: string, facts: AuthenticationFacts) => Promise<UserDocument>
  /** Links a provider account (and its sealed refresh token) to an existing user; same rejection as above. */
  linkProviderAccount: (userId: string, payload: ProviderPayload, options?: { session?: ClientSession }) => Promise<void>
  /** Remembers a connection the Sync service named for the user; no write when it is known. */
  recordProviderConnection: (userId: string, connectionId: string) => Promise<void>
  /** Forgets a connection whose calendars the Sync service removed. */
  forgetProviderConnection: (userId: string, connectionId: string) => Promise<void>
  /** Replaces the set of calendars the user hid; false when there is no such user. */
  setHiddenCalendars: (userId: string, keys: readonly string[]) => Promise<boolean>
  /** Replaces the user's display preferences; false when there is no such user. */
  setPreferences: (userId: string, preferences: UserPreferences) => Promise<boolean>
  /** Records still marked for the email block's enrollment, oldest first. */
  markedForEmailEnrollment: (limit: number) => Promise<UserDocument[]>
  clearEmailEnrollmentMark: (userId: string) => Promise<void>
  /** Runs `listener` after every sign-up of this process, email/password and provider alike. */
  afterSignUp: (listener: SignUpListener) => void
  /**
   * Runs `listener` whenever a user proves an identity: each sign-in (its verified email and
   * accounts), a provider account linked, an email verified by its link.
   */
  afterProven: (listener: ProvenListener) => void
  /** Tells the listeners of `afterProven` (for steps outside this store, e.g. after a transaction). */
  proven: (proven: ProvenIdentities) => Promise<void>
}

/** A user id as this collection keys it; any other string names no one. */
export function isUserId (value: string): boolean {
  return ObjectId.isValid(value)
}

/** The provider accounts a user record holds, by provider. */
function accountsOf (user: UserDocument): Record<IdentityProvider, string | undefined> {
  return { google: user.google?.googleId, microsoft: user.microsoft?.microsoftId, apple: user.apple?.appleId }
}

/** The identities a user record says its user proved. */
function provenIdentitiesOf (user: UserDocument): ProvenIdentities {
  const accounts = accountsOf(user)
  return {
    userId: user._id.toHexString(),
    ...(user.emailVerified === true ? { verifiedEmail: user.email } : {}),
    providerAccounts: IDENTITY_PROVIDERS.flatMap((provider) => accounts[provider] === undefined ? [] : [{ provider, accountId: accounts[provider] }])
  }
}

/** A user record as the identity rules (lib/identity.ts) see it. */
export function knownUser (user: UserDocument): KnownUser {
  const accounts = accountsOf(user)
  return {
    userId: user._id.toHexString(),
    email: user.email,
    emailVerified: user.emailVerified === true,
    providers: IDENTITY_PROVIDERS.filter((provider) => accounts[provider] !== undefined)
  }
}

/**
 * Every call has the database deadline (withDatabaseDeadline): these run on people's requests
 * (sign-in, sign-up, the profile, event writes), which answer 503 rather than wait on a silent
 * database.
 */
export function createUserStore (collection: Collection<UserDocument>, options: UserStoreOptions = {}): UserStore {
  const signUpListeners: SignUpListener[] = []
  const provenListeners: ProvenListener[] = []
  async function proven (identities: ProvenIdentities): Promise<void> {
    for (const listener of provenListeners) await listener(identities)
  }
  return {
    async findById (userId) {
      if (!ObjectId.isValid(userId)) return null
      return await withDatabaseDeadline(async (signal) => await collection.findOne({ _id: new ObjectId(userId) }, { signal }))
    },
    async findEmailOwner (email) {
      return await withDatabaseDeadline(async (signal) => await collection.findOne({ email: normalizeEmail(email) }, { sort: { emailVerified: -1, _id: 1 }, signal }))
    },
    async findByProviderAccount (provider, accountId) {
      return await withDatabaseDeadline(async (signal) => await collection.findOne({ [PROVIDER_ACCOUNT_FIELD[provider]]: accountId }, { signal }))
    },
    async recordAuthentication (userId, facts) {
      const update = userUpsertFor(facts)
      // The mark goes in with the record itself, so no crash can separate the two.
      if (options.markForEmailEnrollment === true) update.$setOnInsert.emailEnrollmentPending = true
      const user = await withDatabaseDeadline(async () => await collection.findOneAndUpdate(
        { _id: new ObjectId(userId) },
        update,
        { upsert: true, returnDocument: 'after' }
      ))
      if (user === null) throw new Error('user upsert returned no document')
      // A record still marked is new, or one whose enrollment an earlier attempt did not finish.
      if (user.emailEnrollmentPending === true) {
        for (const listener of signUpListeners) await listener(user)
      }
      await proven(provenIdentitiesOf(user))
      return user
    },
    async linkProviderAccount (userId, payload, options = {}) {
      const $set: Record<string, unknown> = { [PROVIDER_ACCOUNT_FIELD[payload.provider]]: payload.accountId }
      if (payload.provider === 'google' && payload.sealedRefreshToken !== undefined) $set['google.gRefreshToken'] = payload.sealedRefreshToken
      const result = await withDatabaseDeadline(async () => await collection.updateOne({ _id: new ObjectId(userId) }, { $set }, options.session === undefined ? {} : { session: options.session }))
      if (result.matchedCount !== 1) throw new Error('no user record to link the provider account to')
      // Inside a transaction the caller tells the listeners once it committed.
      if (options.session === undefined) await proven({ userId, providerAccounts: [{ provider: payload.provider, accountId: payload.accountId }] })
    },
    async recordProviderConnection (userId, connectionId) {
      // Filtered on the id's absence, so every later page of the connection matches nothing and writes nothing.
      await withDatabaseDeadline(async () => await collection.updateOne({ _id: new ObjectId(userId), providerConnections: { $ne: connectionId } }, { $addToSet: { providerConnections: connectionId } }))
    },
    async forgetProviderConnection (userId, connectionId) {
      await withDatabaseDeadline(async () => await collection.updateOne({ _id: new ObjectId(userId) }, { $pull: { providerConnections: connectionId } }))
    },
    async setHiddenCalendars (userId, keys) {
      if (!ObjectId.isValid(userId)) return false
      const result = await withDatabaseDeadline(async () => await collection.updateOne({ _id: new ObjectId(userId) }, { $set: { hiddenCalendars: [...keys] } }))
      return result.matchedCount === 1
    },
    async setPreferences (userId, preferences) {
      if (!ObjectId.isValid(userId)) return false
      const result = await withDatabaseDeadline(async () => await collection.updateOne({ _id: new ObjectId(userId) }, { $set: { preferences } }))
      return result.matchedCount === 1
    },
    async markedForEmailEnrollment (limit) {
      return await collection.find({ emailEnrollmentPending: true }).sort({ _id: 1 }).limit(limit).toArray()
    },
    async clearEmailEnrollmentMark (userId) {
      await collection.updateOne({ _id: new ObjectId(userId) }, { $unset: { emailEnrollmentPending: '' } })
    },
    afterSignUp (listener) {
      signUpListeners.push(listener)
    },
    afterProven (listener) {
      provenListeners.push(listener)
    },
    proven
  }
}

/**
 * The users collection's indexes. Until provider sign-in, an email named one record; now an
 * unverified login may have a record of its own beside the one that proved the address, so only
 * a proven email is unique.
 */
export async function ensureUserIndexes (collection: Collection<UserDocument>): Promise<void> {
  const legacy = await collection.indexExists('email_unique').catch(() => false)
  if (legacy) await collection.dropIndex('email_unique')
  await collection.createIndexes([
    // Also the order of findEmailOwner: the record that proved the address first.
    { key: { email: 1, emailVerified: -1 }, name: 'email_owner' },
    { key: { email: 1 }, name: 'verified_email_unique', unique: true, partialFilterExpression: { emailVerified: true } },
    // One owner per provider account.
    { key: { 'google.googleId': 1 }, name: 'google_account_unique', unique: true, sparse: true },
    { key: { 'microsoft.microsoftId': 1 }, name: 'microsoft_account_unique', unique: true, sparse: true },
    { key: { 'apple.appleId': 1 }, name: 'apple_account_unique', unique: true, sparse: true },
    // The email poller's sweep reads the few records still waiting for their sequence.
    { key: { emailEnrollmentPending: 1 }, name: 'email_enrollment_pending', sparse: true }
  ])
}
