import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import { ConnectionIdSchema, ProviderSchema, UserIdSchema } from './common.js'

// A provider credential the backend obtained (provider sign-in, or connect from a signed-in
// session) handed to the Sync service, which owns every provider effect: it stores the credential
// encrypted, creates or repairs the user's connection, and queues what the mode asks for.

export const GoogleAuthModeSchema = Type.Union([
  Type.Literal('SIGNUP'),
  Type.Literal('SIGNIN_INCREMENTAL'),
  Type.Literal('RECONNECT_REPAIR')
], {
  description: 'SIGNUP: import the calendars (origin providerImport) and set up sync; SIGNIN_INCREMENTAL: check the watch ' +
    '(start one if none, refresh it if expired) and pull incrementally; RECONNECT_REPAIR: repair the connection with this credential'
})

export const CredentialHandOverSchema = Type.Object({
  provider: ProviderSchema,
  providerAccountId: Type.String({ minLength: 1, maxLength: 255, description: 'The provider\'s subject (Google `sub`)' }),
  refreshToken: Type.String({ minLength: 1, maxLength: 4096, description: 'The provider refresh token: newly issued, or the stored one when the provider issued none' }),
  scopes: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 50, description: 'The scopes the grant holds' }),
  mode: GoogleAuthModeSchema,
  idempotencyKey: Type.String({ minLength: 1, maxLength: 100, description: 'Chosen once per hand-over; a retry carries the same key and is applied once' })
}, { additionalProperties: false, description: 'A provider credential for the user\'s connection' })

export const CredentialHandOverResultSchema = Type.Object({
  connectionId: ConnectionIdSchema,
  created: Type.Boolean({ description: 'A new connection was created (otherwise an existing one was updated or repaired)' }),
  queued: Type.Union([Type.Literal('import'), Type.Literal('incremental'), Type.Literal('repair'), Type.Literal('none')], {
    description: 'The job the mode queued (`none` when an equivalent one was already waiting)'
  })
}, { additionalProperties: false })

/** Sync tells the backend that a provider refused a user's grant for good (invalid_grant). */
export const GrantRevokedNoticeSchema = Type.Object({
  userId: UserIdSchema,
  provider: ProviderSchema,
  connectionId: Type.Optional(ConnectionIdSchema)
}, { additionalProperties: false, description: 'The provider answered invalid_grant for the user\'s stored refresh token' })

export const GrantRevokedResultSchema = Type.Object({
  sessionsRevoked: Type.Integer({ minimum: 0, description: 'Sessions of the user that were revoked' }),
  streamsClosed: Type.Integer({ minimum: 0, description: 'Event streams of the user this backend process closed' })
}, { additionalProperties: false })

/** After a provider connect through Sync: may this user hold this provider account? (The direct connect's rules.) */
export const ProviderAccountClaimSchema = Type.Object({
  userId: UserIdSchema,
  provider: Type.Union([Type.Literal('google'), Type.Literal('microsoft')]),
  accountId: Type.String({ minLength: 1, maxLength: 256, description: 'The account\'s stable id at the provider (the ID token\'s sub)' }),
  email: Type.Optional(Type.String({ maxLength: 320, description: 'The account\'s email, as the provider\'s ID token gave it' }))
}, { additionalProperties: false })

export const ProviderAccountClaimResultSchema = Type.Object({
  outcome: Type.Union([Type.Literal('claimed'), Type.Literal('conflict'), Type.Literal('mismatch')], {
    description: 'claimed: the account is the user\'s now (or was); conflict: another user holds it; mismatch: its email is not the user\'s'
  })
}, { additionalProperties: false })

export type ProviderAccountClaim = Static<typeof ProviderAccountClaimSchema>
export type ProviderAccountClaimResult = Static<typeof ProviderAccountClaimResultSchema>
export type GoogleAuthModeWire = Static<typeof GoogleAuthModeSchema>
export type CredentialHandOver = Static<typeof CredentialHandOverSchema>
export type CredentialHandOverResult = Static<typeof CredentialHandOverResultSchema>
export type GrantRevokedNotice = Static<typeof GrantRevokedNoticeSchema>
export type GrantRevokedResult = Static<typeof GrantRevokedResultSchema>
