import { isObjectIdString, mintObjectId } from './ids.js'

// Identity rules of the specification ("Identity model", "User record"), over plain data.

export function normalizeEmail (email: string): string {
  return email.trim().toLowerCase()
}

export const isCanonicalUserId = isObjectIdString
export const mintUserId = mintObjectId

/** The sign-in providers: Google (provider A), Microsoft (provider B) and Apple (ID sign-in). */
export const IDENTITY_PROVIDERS = ['google', 'microsoft', 'apple'] as const
export type IdentityProvider = typeof IDENTITY_PROVIDERS[number]

export function isIdentityProvider (value: string): value is IdentityProvider {
  return (IDENTITY_PROVIDERS as readonly string[]).includes(value)
}

/** Where each provider's account id lives on the user record (one owner per account: a unique index each). */
export const PROVIDER_ACCOUNT_FIELD: Record<IdentityProvider, string> = {
  google: 'google.googleId',
  microsoft: 'microsoft.microsoftId',
  apple: 'apple.appleId'
}

// Apple's "Hide My Email" addresses: each forwards to the person's real address, differs per app,
// and says nothing about who owns any other account.
const PRIVATE_RELAY_DOMAIN = 'privaterelay.appleid.com'

export function isPrivateRelayAddress (email: string): boolean {
  return normalizeEmail(email).endsWith(`@${PRIVATE_RELAY_DOMAIN}`)
}

/** What a provider told us about the person signing in. */
export interface ProviderLogin {
  provider: IdentityProvider
  /** The provider's subject: stable per person (and per app, for Microsoft and Apple). */
  accountId: string
  /** Normalized. */
  email: string
  /** The provider vouches that the person controls the address. */
  emailVerified: boolean
  /** Apple says the address is a private relay (also recognised by its domain). */
  privateRelay: boolean
}

/** A user record as the identity rules see it. */
export interface KnownUser {
  userId: string
  /** Normalized. */
  email: string
  /** Some login of this user proved control of the record's email. */
  emailVerified: boolean
  /** Which providers' accounts the record holds already. */
  providers: IdentityProvider[]
}

export type Resolution =
  /** The provider account belongs to this user already. */
  | { via: 'account', userId: string, claimVerifiedEmail: boolean }
  /** A verified login joins the user who owns the same verified email. */
  | { via: 'email', userId: string, claimVerifiedEmail: boolean }
  /** A user of its own. */
  | { via: 'new', userId: string, claimVerifiedEmail: boolean }

/** Whether a login may join an existing user by its email (Identity model 4 and 5). */
export function mayJoinByEmail (login: ProviderLogin, owner: KnownUser): boolean {
  if (!login.emailVerified || login.privateRelay || isPrivateRelayAddress(login.email)) return false
  // The existing user must have proved the address too: an unverified password account could be
  // anyone's, and joining it would hand this person's calendar to whoever created it.
  if (!owner.emailVerified) return false
  // One account per provider on a record: another account of the same provider stays separate.
  return !owner.providers.includes(login.provider)
}

/**
 * The canonical user of a provider login (Identity model 5): the owner of the provider account;
 * else the owner of the same email when `mayJoinByEmail`; else a user of its own, under the id
 * the session library issued when that is a canonical id nobody else uses, or a new one.
 */
export function resolveProviderUser (input: {
  login: ProviderLogin
  accountOwner: KnownUser | undefined
  emailOwner: KnownUser | undefined
  sessionUserId: string
  /** A record exists under the session's id (then it is someone else's, or the account owner found above). */
  sessionUserHasRecord: boolean
}): Resolution {
  const { login, accountOwner, emailOwner } = input
  const verifiable = login.emailVerified && !login.privateRelay && !isPrivateRelayAddress(login.email)
  // Only one record may hold a verified email; a second verified owner stays unverified.
  const claimFor = (userId: string): boolean => verifiable && (emailOwner === undefined || !emailOwner.emailVerified || emailOwner.userId === userId)
  if (accountOwner !== undefined) {
    // The record keeps the email it has; a provider vouching for another address proves nothing about it.
    return { via: 'account', userId: accountOwner.userId, claimVerifiedEmail: accountOwner.email === login.email && claimFor(accountOwner.userId) }
  }
  if (emailOwner !== undefined && mayJoinByEmail(login, emailOwner)) return { via: 'email', userId: emailOwner.userId, claimVerifiedEmail: true }
  const userId = isCanonicalUserId(input.sessionUserId) && !input.sessionUserHasRecord ? input.sessionUserId : mintUserId()
  return { via: 'new', userId, claimVerifiedEmail: claimFor(userId) }
}

/**
 * The canonical user of a password login (Identity model 2 and 3): the user that owns the email,
 * unless the login has not verified the address and that user holds anything worth taking (a
 * verified email or a provider account): then the login stays a user of its own until it
 * verifies its email, and joins at its next sign-in after that.
 */
export function resolvePasswordUser (input: {
  emailOwner: KnownUser | undefined
  sessionUserId: string
  loginEmailVerified: boolean
}): { userId: string, claimVerifiedEmail: boolean } {
  const { emailOwner, sessionUserId, loginEmailVerified } = input
  const claimFor = (userId: string): boolean => loginEmailVerified && (emailOwner === undefined || !emailOwner.emailVerified || emailOwner.userId === userId)
  if (emailOwner !== undefined) {
    const unclaimed = !emailOwner.emailVerified && emailOwner.providers.length === 0
    if (emailOwner.userId === sessionUserId || unclaimed || (loginEmailVerified && emailOwner.emailVerified)) {
      return { userId: emailOwner.userId, claimVerifiedEmail: claimFor(emailOwner.userId) }
    }
  }
  const userId = isCanonicalUserId(sessionUserId) ? sessionUserId : mintUserId()
  return { userId, claimVerifiedEmail: claimFor(userId) }
}

/** The id a brand-new password login is mapped to: the unclaimed record that owns its email, else a new one. */
export function idForNewPasswordLogin (emailOwner: KnownUser | undefined): string {
  return resolvePasswordUser({ emailOwner, sessionUserId: '', loginEmailVerified: false }).userId
}

export interface ProviderPayload {
  provider: IdentityProvider
  /** The external-provider account id. */
  accountId: string
  /** The provider refresh token, sealed (lib/credential-cipher.ts); only when it changed. */
  sealedRefreshToken?: string
}

export interface AuthenticationFacts {
  email: string
  name?: string
  now: Date
  /** Some login proved control of the email (never unset once set). */
  emailVerified?: boolean
  // Present only when this authentication brought new provider data.
  provider?: ProviderPayload
}

export interface UserUpdate {
  $set: Record<string, unknown>
  $setOnInsert: Record<string, unknown>
}

// signedUpAt is written once, lastLoggedInAt on every authentication, and an existing provider
// payload stays unless this authentication brings a new one. An email proven once stays proven.
export function userUpsertFor (facts: AuthenticationFacts): UserUpdate {
  const $set: Record<string, unknown> = { lastLoggedInAt: facts.now }
  const $setOnInsert: Record<string, unknown> = { signedUpAt: facts.now }
  // A password login signs in with the record's email, so it is the record's email; a provider's
  // address only names a new record: a later change at the provider does not move the user's.
  if (facts.provider === undefined) $set.email = normalizeEmail(facts.email)
  else $setOnInsert.email = normalizeEmail(facts.email)
  if (facts.name !== undefined && facts.name.trim() !== '') $set.name = facts.name.trim()
  if (facts.emailVerified === true) $set.emailVerified = true
  else $setOnInsert.emailVerified = false
  if (facts.provider !== undefined) {
    $set[PROVIDER_ACCOUNT_FIELD[facts.provider.provider]] = facts.provider.accountId
    if (facts.provider.provider === 'google' && facts.provider.sealedRefreshToken !== undefined) {
      $set['google.gRefreshToken'] = facts.provider.sealedRefreshToken
    }
  }
  return { $set, $setOnInsert }
}
