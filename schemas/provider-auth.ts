import { Type, type Static } from '@sinclair/typebox'
import { GoogleAuthModeSchema } from './sync/credentials.js'

// Provider sign-in (through the session library's sign-in-up route) and provider connect from a
// signed-in session (POST /api/auth/extprovider/connect).

const IdentityProviderSchema = Type.Union([Type.Literal('google'), Type.Literal('microsoft'), Type.Literal('apple')], {
  description: 'Sign-in provider (the session library\'s `thirdPartyId`)'
})

const CalendarEffectSchema = Type.Union([
  Type.Literal('import'), Type.Literal('incremental'), Type.Literal('repair'), Type.Literal('none')
], { description: 'What the Sync service was asked to do with the user\'s calendar of this provider: nothing for Apple sign-in, nor for a sign-in that brought no calendar access' })

export const ProviderSignInSummarySchema = Type.Object({
  provider: IdentityProviderSchema,
  newUser: Type.Boolean({ description: 'This login created the user' }),
  linkedBy: Type.Union([Type.Literal('account'), Type.Literal('email'), Type.Literal('new')], {
    description: '`account`: the provider account\'s user; `email`: joined the user with the same verified email; `new`: a user of its own'
  }),
  mode: Type.Optional(GoogleAuthModeSchema),
  calendar: CalendarEffectSchema
}, { additionalProperties: false, description: 'Added as `summary` to the session library\'s answer of a provider sign-in' })

export const ProviderConnectRequestSchema = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 2048, description: 'The `code` of the OAuth redirect, as the web callback received it' }),
  state: Type.String({ minLength: 1, maxLength: 2048, description: 'The `state` of the redirect; the client has compared it with the one it sent' }),
  scope: Type.Optional(Type.String({ maxLength: 4096, description: 'The `scope` of the redirect (space-separated), as received' })),
  redirectUri: Type.String({ minLength: 1, maxLength: 2048, description: 'The redirect URI the code was issued for: `{web.url}/auth/extprovider/callback`' }),
  codeVerifier: Type.Optional(Type.String({ minLength: 43, maxLength: 128, description: 'The PKCE verifier, when the authorization used a challenge' })),
  correlationId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{4,64}$', description: 'The client\'s short id of this connect round trip; the backend\'s oauth_callback analytics event carries it, as the client\'s oauth_return does' }))
}, { additionalProperties: false, description: 'The authorization-code payload of Google\'s redirect' })

export const ProviderConnectResponseSchema = Type.Object({
  result: Type.Literal('User connected'),
  mode: GoogleAuthModeSchema,
  calendar: CalendarEffectSchema
}, { additionalProperties: false, description: 'The Google account is linked to the signed-in user; sync restarts in the background' })

export type CalendarEffect = Static<typeof CalendarEffectSchema>
export type ProviderSignInSummary = Static<typeof ProviderSignInSummarySchema>
export type ProviderConnectRequest = Static<typeof ProviderConnectRequestSchema>
export type ProviderConnectResponse = Static<typeof ProviderConnectResponseSchema>
