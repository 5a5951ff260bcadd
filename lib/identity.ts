import { isObjectIdString, mintObjectId } from './ids.js'

// Identity rules of the specification ("Identity model", "User record"), over plain data.

export function normalizeEmail (email: string): string {
  return email.trim().toLowerCase()
}

export const isCanonicalUserId = isObjectIdString
export const mintUserId = mintObjectId

// An existing user with the same normalized email wins; then the id the session library issued
// when it already is a canonical id (its user-id mapping); otherwise a new id.
export function chooseCanonicalUserId (input: { existingUserIdForEmail: string | undefined, sessionUserId: string }): string {
  if (input.existingUserIdForEmail !== undefined) return input.existingUserIdForEmail
  if (isCanonicalUserId(input.sessionUserId)) return input.sessionUserId
  return mintUserId()
}

export interface ProviderPayload {
  // The external-provider account id and its stored refresh token.
  googleId: string
  gRefreshToken?: string
}

export interface AuthenticationFacts {
  email: string
  name?: string
  now: Date
  // Present only when this authentication brought new provider data.
  provider?: ProviderPayload
}

export interface UserUpdate {
  $set: Record<string, unknown>
  $setOnInsert: Record<string, unknown>
}

// signedUpAt is written once, lastLoggedInAt on every authentication, and an existing provider
// payload stays unless this authentication brings a new one.
export function userUpsertFor (facts: AuthenticationFacts): UserUpdate {
  const $set: Record<string, unknown> = {
    email: normalizeEmail(facts.email),
    lastLoggedInAt: facts.now
  }
  if (facts.name !== undefined && facts.name.trim() !== '') $set.name = facts.name.trim()
  if (facts.provider !== undefined) {
    $set['google.googleId'] = facts.provider.googleId
    if (facts.provider.gRefreshToken !== undefined) $set['google.gRefreshToken'] = facts.provider.gRefreshToken
  }
  return { $set, $setOnInsert: { signedUpAt: facts.now } }
}
