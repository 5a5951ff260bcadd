import type { FastifyRequest } from 'fastify'
import supertokens from 'supertokens-node'
import ThirdParty from 'supertokens-node/recipe/thirdparty'
import type { TypeProvider } from 'supertokens-node/recipe/thirdparty'
import { decodeJwt } from 'jose'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { mintUserId } from '../../lib/identity.js'
import type { SignInProvider } from '../../lib/identity-providers.js'
import { oidcNonceFor } from '../../lib/pkce.js'
import { isAllowedRedirectUri } from '../../lib/provider-auth.js'
import type { ProviderSignInSummary } from '../../schemas/provider-auth.js'
import { appOf, libraryRequest } from './context.js'

// The summary of a provider sign-in, added to the library's answer as it is sent.
export const signInSummaries = new WeakMap<FastifyRequest, ProviderSignInSummary>()

/** Provider sign-in (Google, Microsoft, Apple): the grant checked first, the identity rules after. */
export function thirdPartyRecipe (providers: SignInProvider[]): ReturnType<typeof ThirdParty.init> {
  return ThirdParty.init({
    signInAndUpFeature: { providers: providers.map(withPkceAndNonce) },
    override: {
      functions: (original) => ({
        ...original,
        // Provider accounts get a canonical id too; joining them with other logins of the
        // same person follows the identity rules of provider sign-in (signInUpPOST below).
        signInUp: async (input) => {
          const request = supertokens.getRequestFromUserContext(input.userContext)
          if (request !== undefined) {
            // Checked before the library creates or updates anything: a grant without the
            // calendar or without offline access signs nobody in.
            const refusal = await appOf(request).providerAuth.grantRefusal(input.thirdPartyId, input.thirdPartyUserId, input.oAuthTokens as Record<string, unknown>)
            if (refusal !== undefined) return { status: 'SIGN_IN_UP_NOT_ALLOWED', reason: refusal }
          }
          const result = await original.signInUp(input).catch(async (error: unknown) => {
            // The library reads the new login twice (the core's answer, then the user by
            // that id). A concurrent first login of the same account can map the id to its
            // canonical one in between, and the library then refuses its own reads. Asked
            // again, both reads see the mapping.
            if (error instanceof Error && error.message.includes('recipeUserId and user is inconsistent')) return await original.signInUp(input)
            throw error
          })
          if (result.status !== 'OK' || request === undefined) return result
          return await appOf(request).identity.withCanonicalMapping(result, async () => mintUserId())
        }
      }),
      apis: (original) => ({
        ...original,
        // Only the service's own callback may receive a provider's code.
        authorisationUrlGET: original.authorisationUrlGET && (async (input) => {
          if (!isAllowedRedirectUri(input.redirectURIOnProviderDashboard, appOf(input.options.req).config.web.url)) {
            throw new TypedHttpError(400, 'REDIRECT_URI_NOT_ALLOWED', 'The redirect URI is not this service\'s provider callback')
          }
          return await original.authorisationUrlGET!(input)
        }),
        signInUpPOST: original.signInUpPOST && (async (input) => {
          // Both refusals come before the library exchanges anything with the provider.
          const redirect = 'redirectURIInfo' in input ? input.redirectURIInfo : undefined
          if (redirect === undefined) {
            throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REQUIRED', 'Provider sign-in takes the authorization code of the provider\'s redirect')
          }
          if (!isAllowedRedirectUri(redirect.redirectURIOnProviderDashboard, appOf(input.options.req).config.web.url)) {
            throw new TypedHttpError(400, 'REDIRECT_URI_NOT_ALLOWED', 'The redirect URI is not this service\'s provider callback')
          }
          const result = await original.signInUpPOST!(input).catch((error: unknown) => {
            // The library reports a provider's refusal of the code (reused, expired,
            // forged) as a plain error carrying the provider's status.
            if (error instanceof Error && /^Received response with status 4\d\d/.test(error.message)) {
              throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REJECTED', 'The provider did not accept the authorization code; sign in again')
            }
            throw error
          })
          if (result.status !== 'OK') return result
          const method = result.user.loginMethods.find((login) => login.recipeId === 'thirdparty' && login.thirdParty?.id === input.provider.id)
          if (method?.thirdParty === undefined) throw new Error('the provider login is missing from the library\'s answer')
          const fastifyRequest = input.options.req.original as FastifyRequest
          const { session, summary } = await fastifyRequest.server.providerAuth.signedIn(libraryRequest(input), result.session, {
            thirdPartyId: input.provider.id,
            thirdPartyUserId: method.thirdParty.userId,
            email: method.email ?? '',
            rawUserInfo: result.rawUserInfoFromProvider,
            oAuthTokens: result.oAuthTokens as Record<string, unknown>
          })
          signInSummaries.set(fastifyRequest, summary)
          return { ...result, session }
        })
      })
    }
  })
}

/**
 * A sign-in of Google or Microsoft (forcePKCE) carries PKCE S256 and an OIDC nonce derived from
 * the verifier (lib/pkce.ts): the library's authorization URL gets the nonce, and the exchange
 * refuses, before anything is created, a sign-in without the verifier or whose ID token carries
 * another nonce (an ID token or code from an authorization this browser did not begin).
 */
function withPkceAndNonce (provider: SignInProvider): SignInProvider & { override?: (original: TypeProvider) => TypeProvider } {
  if (provider.config.forcePKCE !== true) return provider
  return {
    ...provider,
    override: (original) => {
      if (original.type !== 'oauth2') return original
      return {
        ...original,
        getAuthorisationRedirectURL: async (input) => {
          const answer = await original.getAuthorisationRedirectURL(input)
          if (answer.pkceCodeVerifier === undefined) return answer
          const url = new URL(answer.urlWithQueryParams)
          url.searchParams.set('nonce', await oidcNonceFor(answer.pkceCodeVerifier))
          return { ...answer, urlWithQueryParams: url.toString() }
        },
        exchangeAuthCodeForOAuthTokens: async (input) => {
          const verifier = input.redirectURIInfo.pkceCodeVerifier
          if (verifier === undefined || verifier === '') {
            throw new TypedHttpError(400, 'PKCE_VERIFIER_REQUIRED', 'A provider sign-in takes the PKCE code verifier of its authorization (redirectURIInfo.pkceCodeVerifier)')
          }
          const tokens = await original.exchangeAuthCodeForOAuthTokens(input) as { id_token?: unknown }
          // The signature is checked by the library right after (getUserInfo, against the provider's keys).
          const nonce = typeof tokens.id_token === 'string' ? decodeJwt(tokens.id_token)['nonce'] : undefined
          if (nonce !== await oidcNonceFor(verifier)) {
            throw new TypedHttpError(400, 'NONCE_MISMATCH', 'The provider\'s ID token was not issued for this sign-in; sign in again')
          }
          return tokens
        }
      }
    }
  }
}
