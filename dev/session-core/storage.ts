// What the core keeps, behind one small interface so the data can live in memory or in MongoDB.
// Every multi-step rule that must not race (refresh-token rotation, single-use tokens, unique
// emails) is one atomic storage call here, not a read followed by a write in the handlers.

type RecipeId = 'emailpassword' | 'thirdparty'

export interface UserRecord {
  id: string
  recipeId: RecipeId
  tenantIds: string[]
  /** Trimmed and lower-cased, as the core normalises it. */
  email: string
  /** scrypt hash string; only emailpassword users have one. */
  passwordHash?: string
  thirdParty?: { id: string, userId: string }
  timeJoined: number
  /** Uniqueness key: one emailpassword user per email, one thirdparty user per provider account. */
  uniqueKey: string
}

export interface SessionRecord {
  handle: string
  /** The user id the session was created for, in the form the SDK sent it (external when mapped). */
  userId: string
  tenantId: string
  /** sha256(sha256(refresh token)) of the refresh token the session currently accepts. */
  refreshTokenHash2: string
  /** Refresh-token expiry: past it the session is gone. */
  expiry: number
  createdTime: number
  userDataInJWT: Record<string, unknown>
  userDataInDatabase: Record<string, unknown>
  useStaticKey: boolean
}

export type TokenKind = 'password-reset' | 'email-verification'

export interface TokenRecord {
  kind: TokenKind
  /** sha256 of the token handed out; the token itself is never stored. */
  tokenHash: string
  userId: string
  email: string
  expiry: number
}

export interface MappingRecord {
  superTokensUserId: string
  externalUserId: string
  externalUserIdInfo?: string
}

export interface SigningKey {
  kid: string
  privateKeyPem: string
  createdAt: number
}

/** Everything secret the core signs or encrypts with; persisted so a restart keeps sessions valid. */
export interface KeySet {
  dynamicKey: SigningKey
  staticKey: SigningKey
  /** base64, 32 bytes: AES-256-GCM key that seals refresh tokens. */
  refreshTokenKey: string
}

export type WriteResult = 'ok' | 'duplicate' | 'missing'

export interface Storage {
  /** Returns the stored key set, or creates, stores and returns one when there is none yet. */
  keysOrCreate (create: () => KeySet): Promise<KeySet>

  insertUser (user: UserRecord): Promise<'ok' | 'duplicate'>
  getUser (id: string): Promise<UserRecord | null>
  getUserByUniqueKey (uniqueKey: string): Promise<UserRecord | null>
  getUsersByEmail (email: string): Promise<UserRecord[]>
  getUsersByThirdParty (thirdPartyId: string, thirdPartyUserId: string): Promise<UserRecord[]>
  updateUser (id: string, set: Partial<Omit<UserRecord, 'id'>>): Promise<WriteResult>
  deleteUser (id: string): Promise<boolean>

  insertSession (session: SessionRecord): Promise<void>
  getSession (handle: string): Promise<SessionRecord | null>
  /** Sets the accepted refresh hash and expiry only if the stored hash is still `expectedHash2`. */
  swapRefreshHash (handle: string, expectedHash2: string, newHash2: string, expiry: number): Promise<boolean>
  updateSession (handle: string, set: Partial<Pick<SessionRecord, 'userDataInJWT' | 'userDataInDatabase' | 'useStaticKey'>>): Promise<boolean>
  deleteSessions (handles: string[]): Promise<string[]>
  sessionHandlesOfUsers (userIds: string[], tenantId?: string): Promise<string[]>

  insertToken (token: TokenRecord): Promise<void>
  /** Removes the token and returns it: a token can be consumed once. */
  takeToken (kind: TokenKind, tokenHash: string): Promise<TokenRecord | null>
  deleteTokens (kind: TokenKind, userId: string, email?: string): Promise<void>

  setEmailVerified (userId: string, email: string, verified: boolean): Promise<void>
  isEmailVerified (userId: string, email: string): Promise<boolean>
  hasVerifiedEmails (userId: string): Promise<boolean>
  deleteVerifiedEmails (userId: string): Promise<void>

  getMetadata (userId: string): Promise<Record<string, unknown> | null>
  setMetadata (userId: string, metadata: Record<string, unknown>): Promise<void>
  deleteMetadata (userId: string): Promise<boolean>

  insertMapping (mapping: MappingRecord): Promise<'ok' | 'duplicate'>
  getMappingBySuperTokensId (id: string): Promise<MappingRecord | null>
  getMappingByExternalId (id: string): Promise<MappingRecord | null>
  deleteMapping (superTokensUserId: string): Promise<boolean>
  setMappingInfo (superTokensUserId: string, info: string | undefined): Promise<boolean>

  /** Drops sessions and single-use tokens that expired before `now`, as the core's cleanup job does. */
  purgeExpired (now: number): Promise<void>

  close (): Promise<void>
}
